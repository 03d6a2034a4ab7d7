# Sourced first by the GPU-machine run scripts under docs/measurements/*/ (from the repository root, with R set to
# the run's output folder under $OUT): unpacks the carried binaries (.h200/pack.tar.xz), sources h200_env.sh, and
# sets B (the build folder), TOK (a tokenizer for make-tiny), L (the run's log, opened with the card, its driver and
# clock) and el (a line in the log with the seconds since the start).
mkdir -p "$R"
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$L"
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> "$L"; }
