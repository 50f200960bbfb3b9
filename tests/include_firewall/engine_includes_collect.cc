// Must not compile: the engine does not know the collectors above it (include firewall).
#include "collect/model_profiler.h"
