"""The local runtime: devices, the placer, execution plans, and the events widgets listen to."""
