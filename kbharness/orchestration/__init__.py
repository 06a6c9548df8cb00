"""Many evaluations: jobs, backends, builds ahead of them, baselines, the store, sweeps."""
