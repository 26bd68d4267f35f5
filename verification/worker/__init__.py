"""The worker: one module per task step, the joins, the sweeper, the CPU pool, heartbeat and lifecycle."""
