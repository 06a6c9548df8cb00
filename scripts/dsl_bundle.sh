#!/usr/bin/env bash
# The CuTe DSL and TileLang packages for the GPU machine (Python 3.12, x86_64, CUDA 13), which
# has no network and takes at most 64 MiB carried a call: downloaded here, installed into one
# folder, compressed and split into .whl/dsl.tar.xz.part1..N (git-ignored). Carry one part a
# call while the machine stays warm, then run scripts/gpu_languages.sh with KB_PARTS=N:
#   bash scripts/dsl_bundle.sh 3
#   run: ls .whl                     carry [".whl/dsl.tar.xz.part1"]
#   run: ls .whl                     carry [".whl/dsl.tar.xz.part2"]
#   run: KB_PARTS=3 bash scripts/gpu_languages.sh   carry [".whl/dsl.tar.xz.part3", ".bwrap"]
set -euo pipefail
PARTS=${1:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# What each imports at run time (the GPU image has numpy, typing-extensions, cloudpickle,
# psutil and tqdm): CuTe DSL with its CUDA 13 libraries, TileLang with TVM's FFI and z3.
PACKAGES="nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1
nvidia-cutlass-dsl-libs-cu13==4.8.1 cuda-bindings==13.5.0 cuda-pathfinder==1.9.1 protobuf
tilelang==0.1.15 apache-tvm-ffi==0.1.12 z3-solver==4.15.4.0 torch-c-dlpack-ext ml-dtypes cloudpickle psutil tqdm"
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64"
pip download -q --no-deps --python-version 3.12 $PLATFORMS --only-binary=:all: -d "$WORK/wheels" $PACKAGES
pip install -q --no-deps --target "$WORK/site" --python-version 3.12 $PLATFORMS --only-binary=:all: "$WORK"/wheels/*.whl
# Scripts and the stubs for other platforms are not needed there.
rm -rf "$WORK/site/bin"
find "$WORK/site" \( -path "*stubs/aarch64*" -o -path "*qnx*" \) -prune -exec rm -rf {} +
mkdir -p .whl
rm -f .whl/dsl.tar.xz.part*
tar cf - -C "$WORK/site" . | xz -T0 -6 > "$WORK/dsl.tar.xz"
split -n "$PARTS" -d -a 1 --numeric-suffixes=1 "$WORK/dsl.tar.xz" .whl/dsl.tar.xz.part
ls -l .whl
