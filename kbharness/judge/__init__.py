"""The judge: reference, inputs, comparisons, checks, verdicts. It never imports candidate code."""
