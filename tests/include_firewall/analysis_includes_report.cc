// Must not compile: analysis is below report (tests/CMakeLists.txt, include firewall).
#include "report/format.h"
