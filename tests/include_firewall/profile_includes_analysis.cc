// Must not compile: the profile layer is below analysis (tests/CMakeLists.txt, include firewall).
#include "analysis/rules.h"
