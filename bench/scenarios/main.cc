#include "commands.h"

int main(int argc, char** argv) { return rtloop::bench::Main(argc, argv); }
