namespace rtloop::cyclic {}
