namespace rtloop::telemetry {}
