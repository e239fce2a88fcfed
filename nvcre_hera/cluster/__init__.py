"""The one interface the runtime steps use to talk to a cluster: real (kubernetes client) or simulated."""
