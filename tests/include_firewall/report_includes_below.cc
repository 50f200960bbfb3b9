// Must compile: report links analysis and profile, so their headers resolve (the control of
// the include-firewall tests: a probe fails for the firewall, not for a broken probe).
#include "analysis/rules.h"
#include "profile/profile.h"
#include "report/format.h"
