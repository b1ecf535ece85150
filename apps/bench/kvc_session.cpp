// apps/bench/kvc_session.cpp: see kvc_session.h. Each rep times, one after another:
//   import   Session::load of the payload (parse, then the backend's copy into the session)
//   export   Session::save_to into the payload buffer of the rep before (the server's disk cache
//            reuses its buffer the same way: DiskCache::payload_buffer); the first export, into
//            fresh memory, is reported apart
//   write    KvcStore::save of that payload as a new file (framing, checksums, write, fsync,
//            rename)
//   read     KvcStore::read_file of the file, checksums verified
//   restart  read + import + one decoded token: the first token after a server restart
//   save     export and write together, the write beside the export (kv::save_while_filling:
//            each piece written once the export has made it final)
// and reports each step's median and minimum, and the bytes per second of the median.
#include "kvc_session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "base/byte_buffer.h"
#include "ds4/engine.h"
#include "ds4/session.h"
#include "gguf/reader.h"
#include "kv/kvc_store.h"
#include "kv/snapshot.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/shape.h"

namespace ds4bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class Noise {
 public:
  float next() {
    x_ ^= x_ << 13, x_ ^= x_ >> 7, x_ ^= x_ << 17;
    return static_cast<float>(static_cast<int64_t>(x_ >> 40) - (1 << 23)) / (1 << 23);
  }
  void fill(std::vector<float>* v, size_t n) {
    v->resize(n);
    for (float& f : *v) f = next();
  }

 private:
  uint64_t x_ = 0x2545f4914f6cdd1dull;
};

// A snapshot of `t` tokens with the sizes the session's layout gives them (model::sequence_layout,
// what the engine allocates: live raw rows, compressed and indexer rows, frontiers).
ds4::kv::Snapshot synthesize(const ds4::model::Shape& s, uint32_t t, uint32_t n_ctx,
                             uint32_t prefill_chunk) {
  const ds4::backend::SequenceLayout layout =
      ds4::model::sequence_layout(s, static_cast<int>(n_ctx));
  const size_t hd = static_cast<size_t>(layout.head_dim);
  const size_t ihd = static_cast<size_t>(layout.indexer_head_dim);
  Noise noise;
  ds4::kv::Snapshot snap{
      .n_ctx = n_ctx, .prefill_chunk = prefill_chunk, .tokens = {}, .logits = {}, .layers = {}};
  snap.tokens.resize(t);
  for (uint32_t i = 0; i < t; ++i) snap.tokens[i] = static_cast<int32_t>((i * 7919u) % s.n_vocab);
  noise.fill(&snap.logits, static_cast<size_t>(s.n_vocab));
  snap.layers.resize(layout.layers.size());
  for (size_t il = 0; il < layout.layers.size(); ++il) {
    const ds4::backend::LayerLayout& lay = layout.layers[il];
    ds4::backend::LayerState& l = snap.layers[il];
    l.n_tokens = static_cast<int32_t>(t);
    noise.fill(&l.raw, std::min<size_t>(t, static_cast<size_t>(lay.raw_cap)) * hd);
    if (lay.ratio != 0) {
      const size_t frontier = static_cast<size_t>(lay.frontier_rows) * lay.frontier_width;
      noise.fill(&l.comp, size_t{t / static_cast<uint32_t>(lay.ratio)} * hd);
      noise.fill(&l.comp_kv, frontier);
      noise.fill(&l.comp_score, frontier);
    }
    if (lay.ratio == 4) {
      noise.fill(&l.index, size_t{t / 4} * ihd);
      noise.fill(&l.index_kv, 8 * 256);  // the indexer frontier, [8][256] (backend/frontier.h)
      noise.fill(&l.index_score, 8 * 256);
    }
  }
  return snap;
}

struct Step {
  const char* name;
  std::vector<double> ms;
};

int fail(const char* what, const ds4::Status& st) {
  std::fprintf(stderr, "ds4-kvc-bench: %s: %s\n", what, st.to_string().c_str());
  return 1;
}

}  // namespace

int run_session_bench(const SessionBenchOptions& o) {
  ds4::EngineOptions eo{.model_path = o.model, .threads = o.threads};
  if (o.backend == "cuda") eo.backend = ds4::BackendKind::kCuda;
  auto engine = ds4::Engine::open(eo);
  if (!engine.is_ok()) return fail("open", engine.status());
  // The file's own dimensions (a shape cut to its first layers is no builtin one).
  auto file = ds4::gguf::Reader::open(o.model);
  if (!file.is_ok()) return fail("open", file.status());
  auto shape = ds4::model::shape_from_metadata(*file);
  if (!shape.is_ok()) return fail("shape", shape.status());
  const ds4::SessionOptions so{.n_ctx = static_cast<int>(o.tokens) + 64};
  auto session = (*engine)->create_session(so);
  if (!session.is_ok()) return fail("session", session.status());
  const std::vector<uint8_t> payload =
      ds4::kv::encode_snapshot(*shape, synthesize(*shape, o.tokens, static_cast<uint32_t>(so.n_ctx),
                                                  static_cast<uint32_t>(so.prefill_chunk)));
  auto store = ds4::kv::KvcStore::open({.dir = o.dir, .budget_bytes = uint64_t{1} << 40});
  if (!store.is_ok()) return fail("store", store.status());
  const std::string text = "<｜begin▁of▁sentence｜>ds4-kvc-bench session";
  const ds4::kv::KvcHeader header{.reason = ds4::kv::SaveReason::kCold,
                                  .tokens = o.tokens,
                                  .n_ctx = static_cast<uint32_t>(so.n_ctx)};

  std::vector<Step> steps{{"import (Session::load)", {}},
                          {"export (Session::save)", {}},
                          {"write (KvcStore::save)", {}},
                          {"read (KvcStore::read_file, verified)", {}},
                          {"restart (read + import + 1 token)", {}},
                          {"save (export beside write)", {}}};
  ds4::Session& s = **session;
  ds4::base::ByteBuffer saved;  // the session's payload, its memory kept from rep to rep
  auto fit_saved = [&] {
    if (!saved.resize_within(s.save_bytes())) saved = ds4::base::ByteBuffer(s.save_bytes());
  };
  double first_export_ms = 0;
  for (int rep = -1; rep < o.reps; ++rep) {  // rep -1 warms the allocator and the page cache
    auto t0 = Clock::now();
    if (ds4::Status st = s.load(payload); !st.is_ok()) return fail("import", st);
    const double import_ms = ms_since(t0);
    t0 = Clock::now();
    fit_saved();
    if (ds4::Status st = s.save_to(saved.span()); !st.is_ok()) return fail("export", st);
    const double export_ms = ms_since(t0);
    if (rep < 0) first_export_ms = export_ms;
    // A new file each time (a save of a text already on disk reads that file first, to keep it).
    if (!store->entries().empty()) store->remove(store->entries().at(0).name);
    t0 = Clock::now();
    if (ds4::Status st = store->save(header, text, saved.span(), {}); !st.is_ok())
      return fail("write", st);
    const double write_ms = ms_since(t0);
    const std::string path = o.dir + "/" + store->entries().at(0).name;
    double read_ms = 0;
    {  // the bytes go at the end of the block: the restart reads them again
      t0 = Clock::now();
      auto read = ds4::kv::KvcStore::read_file(path, uint64_t{1} << 40, {});
      read_ms = ms_since(t0);
      if (!read.is_ok()) return fail("read", read.status());
    }
    t0 = Clock::now();
    auto again = ds4::kv::KvcStore::read_file(path, uint64_t{1} << 40, {});
    if (!again.is_ok()) return fail("read", again.status());
    if (ds4::Status st = s.load(again->view.payload); !st.is_ok()) return fail("import", st);
    if (ds4::Status st = s.eval(0); !st.is_ok()) return fail("decode", st);
    const double restart_ms = ms_since(t0);
    if (!store->entries().empty()) store->remove(store->entries().at(0).name);
    t0 = Clock::now();  // the session now holds the restart's token too
    fit_saved();
    if (ds4::Status st = ds4::kv::save_while_filling(*store, header, text, saved.span(), {},
                                                     [&](const std::function<void(size_t)>& ready) {
                                                       return s.save_to(saved.span(), ready);
                                                     });
        !st.is_ok())
      return fail("save", st);
    const double save_ms = ms_since(t0);
    if (rep < 0) continue;
    const double got[] = {import_ms, export_ms, write_ms, read_ms, restart_ms, save_ms};
    for (size_t i = 0; i < steps.size(); ++i) steps[i].ms.push_back(got[i]);
  }
  const double mb = static_cast<double>(payload.size()) / 1e6;
  std::printf("ds4-kvc-bench session: %s (%s, %s backend), %u tokens, payload %.1f MB, %d reps\n\n",
              o.model.c_str(), (*engine)->info().shape.c_str(), o.backend.c_str(), o.tokens, mb,
              o.reps);
  std::printf("| step | median ms | min ms | GB/s (median) |\n|---|---|---|---|\n");
  for (Step& st : steps) {
    std::sort(st.ms.begin(), st.ms.end());
    const double med = st.ms[st.ms.size() / 2];
    std::printf("| %s | %.1f | %.1f | %.2f |\n", st.name, med, st.ms.front(), mb / med);
  }
  std::printf("\nfirst export, into a fresh buffer: %.1f ms\n", first_export_ms);
  return 0;
}

}  // namespace ds4bench
