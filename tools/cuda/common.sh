# tools/cuda/common.sh: sourced by the GPU-machine scripts in this folder (run from the
# repository root, with the carried .devdeps prefix: nlohmann_json headers, the vocabulary GGUF;
# with .devdeps/serve, the serving stack's libraries copied from a Debian machine: cpp-httplib's
# header, library and a pkg-config file, OpenSSL's headers and libraries, brotli's libraries).
#   ds4_build TARGET...   configure $BUILD_DIR (default build-dev: Release, CUDA sm_90, no tests;
#                         DS4_TESTS=ON with GoogleTest carried in .devdeps/lib and .devdeps/include,
#                         the ds4_vocab test fixture copying .devdeps/ds4-vocab.gguf) and build the
#                         targets; output on stdout/stderr
#   ds4_flash_model       synthesize the Flash q2 file (published layout, 86.7 GB; FLASH_LAYERS
#                         cuts it) into $DS4_FLASH when it is missing; ds4-gguf prints the time
#   serve_tools_build NAME  ds4_build of the serving tools (ds4-server, ds4-loadgen, ds4-gguf;
#                         LD_LIBRARY_PATH then finds .devdeps/serve), its output into
#                         $out/NAME-build.log and its tail on failure
# FLASH_LAYERS=N: the Flash q2 file cut to its first N layers (ds4-gguf synth --n-layer; ~1.9 GB
# a layer, so 30 fit an 80 GB H100 beside 32 sessions), for the Flash steps where no H200 is lent.
DS4_FLASH=${DS4_FLASH:-/dev/shm/flash-q2${FLASH_LAYERS:+-${FLASH_LAYERS}l}.gguf}  # another file (the decisive one of compat.sh) by name

ds4_build() {
  local dir=${BUILD_DIR:-build-dev} serve=() tests=()
  if [[ -d .devdeps/serve ]]; then
    export PKG_CONFIG_PATH=$PWD/.devdeps/serve/lib/pkgconfig
    export LD_LIBRARY_PATH=$PWD/.devdeps/serve/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    serve=(-DOPENSSL_ROOT_DIR="$PWD/.devdeps/serve")
  fi
  if [[ ${DS4_TESTS:-OFF} == ON && -s .devdeps/ds4-vocab.gguf ]]; then
    tests=(-DDS4_TEST_VOCAB_GGUF="$PWD/.devdeps/ds4-vocab.gguf")
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_CUDA=ON -DCUDA_ARCH=90 \
    -DDS4_BUILD_TESTS="${DS4_TESTS:-OFF}" -DDS4_BUILD_BENCH=OFF -DDS4_WERROR=OFF -DCMAKE_PREFIX_PATH="$PWD/.devdeps" \
    -DCMAKE_CXX_FLAGS="-I$PWD/.devdeps/include" "${serve[@]}" "${tests[@]}" && ninja -C "$dir" -j "$(nproc)" "$@"
}

serve_tools_build() {
  ds4_build ds4-server ds4-loadgen ds4-gguf > "$out/$1-build.log" 2>&1 ||
    { tail -30 "$out/$1-build.log"; return 1; }
}

# The Flash MTP draft file (synthesized, model.md §2.4) into $DS4_FLASH_MTP when it is missing.
DS4_FLASH_MTP=${DS4_FLASH_MTP:-/dev/shm/flash-mtp.gguf}
ds4_flash_mtp() {
  [[ -s $DS4_FLASH_MTP ]] || build-dev/bin/ds4-gguf synth --shape flash --quant q2 --seed 1 \
    --vocab .devdeps/ds4-vocab.gguf --mtp -o "$DS4_FLASH_MTP"
}

ds4_flash_model() {
  [[ -s $DS4_FLASH ]] || build-dev/bin/ds4-gguf synth --shape flash --quant q2 --seed 1 \
    ${FLASH_LAYERS:+--n-layer "$FLASH_LAYERS"} --vocab .devdeps/ds4-vocab.gguf -o "$DS4_FLASH"
}
