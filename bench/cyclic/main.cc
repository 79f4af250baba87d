// rtloop-cyclic: cyclictest 2.4's command line and output on rtloop's executor (see
// cyclic_runner.h).
#include "cyclic_runner.h"

int main(int argc, char** argv) { return rtloop::cyclic::RunCyclic(argc, argv); }
