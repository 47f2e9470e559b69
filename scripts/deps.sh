#!/usr/bin/env bash
# scripts/deps.sh: install the Debian 12 packages tdsl needs, only those missing.
# `apt-get update` runs once, and only when something has to be installed.
# Usage: scripts/deps.sh [--bench|--fuzz]   (--bench adds python3-torch, OpenBLAS and Halide 14
# with its autoscheduler plugins; --fuzz clang and its libFuzzer runtime, for `make fuzz`)
set -euo pipefail
pkgs=(gcc cmake flex bison pkg-config llvm-14-dev lld libcmocka-dev python3-numpy python3-pytest)  # lld: tdslc's code order (CMakeLists.txt)
[[ "${1:-}" == "--bench" ]] && pkgs+=(python3-torch libopenblas0-pthread python3-halide libhalide14-0-dev)  # OpenBLAS:
# the BLAS bench compares with; Halide 14: bench/halide_work.py (the autoschedulers are in libhalide14-0-dev)
[[ "${1:-}" == "--fuzz" ]] && pkgs+=(clang libclang-rt-14-dev)  # -fsanitize=fuzzer

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "deps.sh: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
