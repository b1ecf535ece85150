// src/tokenizer/bpe.cpp: the merge loop. Symbols start as the single-byte tokens of the piece and
// live in a linked list; candidate pairs sit in a min-heap ordered by (rank, position), so each
// merge costs O(log n) and long pieces (runs of thousands of identical characters) stay linear-ish.
// Heap entries record the ids they were made from and are skipped when stale.
#include "tokenizer/bpe.h"

#include <climits>
#include <queue>

namespace ds4::tokenizer {
namespace {

struct Symbol {
  TokenId id;
  int32_t prev;
  int32_t next;
};

struct Candidate {
  int32_t rank;
  int32_t left;  // index of the left symbol; order of indices is text order
  TokenId left_id;
  TokenId right_id;
  TokenId result;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

void BpeEncoder::merge_short(std::string_view piece, std::vector<TokenId>* out) const {
  // Same result as merge(): the lowest rank wins, the leftmost among equal ranks (strict <).
  // Symbols and the rank of each adjacent pair live in small arrays; after a merge only the two
  // pairs touching the new symbol are looked up again.
  constexpr int32_t kNoMerge = INT32_MAX;
  const int32_t n = static_cast<int32_t>(piece.size());
  TokenId ids[kShortPiece];
  int32_t rank[kShortPiece];  // rank[i]: merge rank of (ids[i], ids[i + 1])
  TokenId result[kShortPiece];
  auto lookup = [&](int32_t i) {
    const Merge* m = vocab_.merges.find(Vocab::pair_key(ids[i], ids[i + 1]));
    rank[i] = m == nullptr ? kNoMerge : m->rank;
    result[i] = m == nullptr ? -1 : m->result;
  };
  for (int32_t i = 0; i < n; ++i)
    ids[i] = vocab_.byte_token[static_cast<uint8_t>(piece[static_cast<size_t>(i)])];
  int32_t len = n;
  for (int32_t i = 0; i + 1 < len; ++i) lookup(i);
  while (len > 1) {
    int32_t best = -1;
    for (int32_t i = 0; i + 1 < len; ++i) {
      if (rank[i] != kNoMerge && (best < 0 || rank[i] < rank[best])) best = i;
    }
    if (best < 0) break;
    ids[best] = result[best];
    for (int32_t i = best + 1; i + 1 < len; ++i) {
      ids[i] = ids[i + 1];
      rank[i] = rank[i + 1];
      result[i] = result[i + 1];
    }
    --len;
    if (best > 0) lookup(best - 1);
    if (best + 1 < len) lookup(best);
  }
  out->insert(out->end(), ids, ids + len);
}

void BpeEncoder::merge(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.size() <= kShortPiece) {
    merge_short(piece, out);
    return;
  }
  const int32_t n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    sym[static_cast<size_t>(i)] = {
        vocab_.byte_token[static_cast<uint8_t>(piece[static_cast<size_t>(i)])], i - 1,
        i + 1 < n ? i + 1 : -1};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = sym[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const TokenId a = sym[static_cast<size_t>(left)].id, b = sym[static_cast<size_t>(right)].id;
    const Merge* m = vocab_.merges.find(Vocab::pair_key(a, b));
    if (m != nullptr) heap.push({m->rank, left, a, b, m->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[static_cast<size_t>(c.left)];
    if (l.id != c.left_id || l.next < 0 || sym[static_cast<size_t>(l.next)].id != c.right_id)
      continue;
    Symbol& r = sym[static_cast<size_t>(l.next)];
    l.id = c.result;
    r.id = -1;  // dead
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = sym[static_cast<size_t>(i)].next)
    out->push_back(sym[static_cast<size_t>(i)].id);
}

void BpeEncoder::encode_piece(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    out->push_back(vocab_.byte_token[static_cast<uint8_t>(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= kCacheMaxPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out->size();
  merge(piece, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();  // bounded memory, simple policy
    cache_.emplace(std::string(piece),
                   std::vector<TokenId>(out->begin() + static_cast<ptrdiff_t>(start), out->end()));
  }
}

}  // namespace ds4::tokenizer
