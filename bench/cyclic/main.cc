// rtloop-cyclic: cyclictest 2.4's command line and output on rtloop's executor (see
// cyclic_runner.h). Where rtloop's libraries are static archives this is the lean binary: no
// server library linked, and a run with --telemetry, --metrics or --record handed over to
// rtloop-cyclic-full (README.md, "Two binaries"). In a shared-library build it is the full one.
#include "cyclic_runner.h"

#ifndef RTLOOP_CYCLIC_FULL
#include "cyclic_handover.h"
#endif

int main(int argc, char** argv) {
#ifdef RTLOOP_CYCLIC_FULL
  return rtloop::cyclic::RunCyclic(argc, argv, {.services = &rtloop::LinkedRuntimeServices});
#else
  return rtloop::cyclic::RunCyclic(argc, argv, {.hand_over = &rtloop::cyclic::HandOverToFull});
#endif
}
