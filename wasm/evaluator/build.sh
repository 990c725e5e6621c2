#!/usr/bin/env bash
# Builds the sandbox's fast evaluator (wasm/evaluator/eval.c) into
# wasm/evaluator.wasm, or into the file named by $1, with Debian's
# clang 14 and wasm-ld: freestanding (no libc, no imports), the stack
# first so that overflowing it traps instead of overwriting data. The
# same compiler and source give the same bytes (TestEvaluatorUpToDate).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-wasm/evaluator.wasm}"
clang="${CLANG:-clang-14}"
"$clang" --target=wasm32 -std=c11 -O2 -nostdlib -fno-builtin -mbulk-memory \
	-Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-ffile-prefix-map="$PWD"=. \
	-Wl,--no-entry -Wl,--stack-first -Wl,-z,stack-size=262144 \
	-Wl,--initial-memory=2097152 -Wl,--strip-all \
	-o "$out" wasm/evaluator/eval.c
