// src/backend/routing.h: expert selection and routing weights of one token (model.md §4.10 steps
// 3-5), shared by every backend: p = sqrt(softplus(logit)); hash layers take the token's row of
// the tid2eid table, other layers the top-k of p + bias (ties: lower expert id); weights are the
// unbiased p of the selected experts, normalised (sum floored at 2^-14) and scaled.
#pragma once

#include <cstdint>

namespace ds4::backend {

// `logits` (n_expert) is turned into p in place. tid2eid_row: the k table entries of the token, or
// nullptr for top-k routing (bias may be nullptr).
void route_token(float* logits, int n_expert, const float* bias, const int32_t* tid2eid_row, int k,
                 float weight_scale, int32_t* sel, float* weights);

}  // namespace ds4::backend
