// include/ds4/session.h: one sequence being evaluated: its live tokens, KV state and next-token
// logits (model.md §5, features.md).
// Owns: the token list, the logits of the next token, the session's backend state (released on
// destruction), and snapshot save/load in the DSV4 payload format (model.md §5.3, version 2).
// Does not own: the model (borrowed from its Engine, which must outlive it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ds4/sampling.h"
#include "ds4/status.h"
#include "ds4/types.h"

namespace ds4 {

class Engine;

// Directional steering (features.md §8): in every layer the attention and FFN outputs y lose
// `attn` and `ffn` times their component along that layer's direction d of the engine's direction
// file, y <- y - s * d * (d . y) (a positive scale suppresses the direction, a negative one
// amplifies it). 0 leaves the path untouched. Each scale lies in [-kMaxScale, kMaxScale]; a
// non-zero scale needs a direction file (EngineOptions::steering_file).
struct Steering {
  static constexpr float kMaxScale = 100.0f;
  float attn = 0.0f;
  float ffn = 0.0f;
  bool active() const { return attn != 0.0f || ffn != 0.0f; }
  bool operator==(const Steering&) const = default;
};

struct SessionOptions {
  int n_ctx = 4096;  // maximum tokens the session can hold
  // Rows per batch when evaluating many tokens (does not change results; a GPU runs larger batches
  // faster: each routed expert's weights serve more rows).
  int prefill_chunk = 2048;
  // The session's steering scales; none: the engine's (EngineOptions::steering).
  std::optional<Steering> steering;
};

// What a sync/append did.
struct EvalStats {
  int reused = 0;     // tokens kept from the live state
  int evaluated = 0;  // tokens run through the model
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int n_ctx() const;
  int n_tokens() const;
  std::span<const TokenId> tokens() const;

  // Makes the live tokens equal `prefix`. When the live tokens are a prefix of it only the new
  // suffix is evaluated; otherwise the state is rebuilt from the longest reusable start (CPU: from
  // position 0). Errors (the session is left empty but valid): empty prefix, prefix.size() >=
  // n_ctx, token id out of range.
  Result<EvalStats> sync(std::span<const TokenId> prefix);
  // Appends tokens in prefill chunks. With `all_logits`, the logits after every appended token are
  // stored there (tokens.size() x n_vocab), a diagnostic used by tests and --dump-logits.
  Result<EvalStats> append(std::span<const TokenId> tokens,
                           std::vector<float>* all_logits = nullptr);
  // Appends one token.
  Status eval(TokenId token);
  // Speculative decoding, greedy: appends the longest prefix of `drafts` that greedy decoding
  // would produce -- drafts[0] the argmax of the current logits, each later draft the argmax after
  // the one before -- evaluating them all as one batch and taking the rest back exactly. Returns
  // how many it kept (0: drafts[0] is not the argmax, and nothing changed); the logits are those
  // after the last kept token, so the caller's next greedy token is the one the model gives there.
  // The result equals decoding the kept tokens one by one, bit for bit. Errors: a backend that
  // cannot take rows back, invalid tokens or a full context (nothing changed), a slice engine.
  Result<int> verify_greedy(std::span<const TokenId> drafts);
  // Whether run[k] stays, given the logits after run[k - 1] (verify calls it for k = 1, 2, ...
  // in order and stops at the first false).
  using DraftAccept = std::function<bool(int k, std::span<const float> logits)>;
  // Speculative decoding with any acceptance rule: evaluates `run` as one batch -- run[0] the
  // token already chosen from the current logits, run[1..] drafts -- and appends run[0] and each
  // later token while `accept` keeps it; the rest is taken back exactly, and the logits are those
  // after the last kept token. Returns how many it kept (at least 1). The result equals
  // evaluating the kept tokens one by one (bit for bit on the CPU, and on CUDA for runs of up to 7
  // tokens). Errors as verify_greedy (nothing changed), and no logits yet.
  Result<int> verify(std::span<const TokenId> run, const DraftAccept& accept);
  // MTP speculative decoding, greedy (EngineOptions::mtp_path; model.md §8): the greedy token of
  // the current logits, then up to `max_drafts` tokens drafted after it by the MTP block (see
  // draft() for `margin`), all verified as one batch (verify_greedy). Returns how many tokens it
  // appended (at least the greedy one); the result equals greedy decoding one token at a time.
  // Without a draft state (can_draft() false) it appends the greedy token alone.
  Result<int> step_greedy(int max_drafts, float margin = 0.0f);
  // The MTP block's drafts of the tokens after `next` (the token the caller appends next), at
  // most `n`; drafting stops before a draft whose lead over the block's second choice is under
  // `margin` logits (0: never). The session's tokens and state do not change. Errors: no draft
  // state, n outside [1, 16], `next` out of range.
  Result<std::vector<TokenId>> draft(TokenId next, int n, float margin = 0.0f);
  // Whether the MTP block can draft here: an MTP file is loaded and the block's window holds the
  // positions a draft reads (append, eval, sync, rewind, verification and Engine::step keep it up
  // to date; after a snapshot load it starts again with the next tokens and is full n_swa - 1
  // positions later).
  bool can_draft() const;
  // A layer slice's append (an engine whose EngineOptions::layers is not the whole model: the
  // calls above refuse it): `tokens` as append() takes them, their hidden state from the slice
  // before (tokens.size() x ModelInfo::hidden_width floats; empty when the slice starts at layer
  // 0). Returns the hidden state after the slice's last layer (the same size) when it has no
  // output head, else the logits after the last token (also logits() then). Errors (nothing
  // appended): a token id out of range, too many tokens, hidden_in of the wrong size.
  Result<std::vector<float>> append_slice(std::span<const TokenId> tokens,
                                          std::span<const float> hidden_in);
  // Drops tokens after the first `n_tokens` (re-evaluating the kept ones; exact).
  Status rewind(int n_tokens);

  // Logits of the next token (empty before the first token).
  std::span<const float> logits() const;
  std::vector<TokenLogprob> top_logprobs(int k) const;
  TokenId sample(const SamplingParams& params, Rng& rng) const;

  // DSV4 payload (version 2): tokens, next-token logits, every layer's live state.
  Result<std::vector<uint8_t>> save() const;
  // The same payload written over `out`, which must be exactly save_bytes() long (memory the
  // caller reuses across saves: a 29k-token Flash session is ~420 MB, and fresh memory costs its
  // page faults and zero fill on every save). `ready` (may be empty) is told each time more of
  // out's leading bytes are final (a count that only grows, last out.size() on success), so
  // another thread may write them to a file meanwhile. Errors: an empty session, a layer slice
  // without a whole snapshot, `out` of another size (nothing written then).
  Status save_to(std::span<uint8_t> out, const std::function<void(size_t)>& ready = {}) const;
  // The size of the payload save() and save_to() give now (0 for an empty session).
  uint64_t save_bytes() const;
  // Restores a payload written by save() for the same model and context settings. Errors (the
  // session is unchanged): bad magic/version, another model's shape, a larger context or another
  // prefill chunk, inconsistent row counts, truncated or trailing bytes.
  Status load(std::span<const uint8_t> payload);
  // The state of this engine's layers only, for a distributed snapshot: a DS4L layer shard (see
  // src/kv/snapshot.h), whatever the engine's slice. Errors: an empty session.
  Result<std::vector<uint8_t>> save_layers() const;
  // Installs a layer shard of exactly this engine's layers for the `tokens` it covers; the
  // next-token logits are not part of a shard and stay empty. Errors (another range, sizes, token
  // count) leave the session unchanged.
  Status load_layers(std::span<const uint8_t> shard, std::span<const TokenId> tokens);
  Status save_file(const std::string& path) const;
  Status load_file(const std::string& path);

  // The steering scales the session's next passes use (the engine's unless set here or in
  // SessionOptions::steering). The state already computed keeps the scales it was computed with:
  // a caller reusing a session's prefix across requests must match their scales too. Errors
  // (nothing changed): a scale out of range or not finite, a non-zero scale without a direction
  // file.
  Status set_steering(const Steering& steering);
  Steering steering() const;

  // KV state bytes allocated for this session.
  uint64_t state_bytes() const;

  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);

 private:
  friend class Engine;  // Engine::step advances sessions it owns the backend of
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4
