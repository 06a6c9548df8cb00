"""kbharness: an evaluation harness for KernelBench-style custom-kernel candidates."""
