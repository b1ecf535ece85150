// apps/loadgen/stats.cpp: see stats.h.
#include "apps/loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ds4::loadgen {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

DecodePhase decode_phase(const std::vector<DecodeTimes>& phases, int streams) {
  // Sweep over the phases' opening (+1) and closing (-1) times; closings first at equal times.
  std::vector<std::pair<double, int>> edges;
  for (const DecodeTimes& p : phases) {
    if (p.tokens.empty() || p.end < p.tokens.front()) continue;
    edges.emplace_back(p.tokens.front(), +1);
    edges.emplace_back(p.end, -1);
  }
  std::sort(edges.begin(), edges.end());
  std::vector<std::pair<double, double>> full;  // spans with every stream decoding
  int open = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    open += edges[i].second;
    if (open >= streams && i + 1 < edges.size() && edges[i + 1].first > edges[i].first)
      full.emplace_back(edges[i].first, edges[i + 1].first);
  }
  DecodePhase out;
  for (const auto& [a, b] : full) out.seconds += b - a;
  for (const DecodeTimes& p : phases) {
    for (size_t k = 1; k < p.tokens.size(); ++k) {
      const double t = p.tokens[k];
      const auto it = std::upper_bound(
          full.begin(), full.end(), t,
          [](double x, const std::pair<double, double>& s) { return x < s.first; });
      if (it != full.begin() && t <= std::prev(it)->second) ++out.tokens;
    }
  }
  return out;
}

std::vector<double> gaps_within(const std::vector<DecodeTimes>& phases, double from, double to) {
  std::vector<double> out;
  for (const DecodeTimes& p : phases) {
    for (size_t k = 1; k < p.tokens.size(); ++k) {
      if (p.tokens[k - 1] < to && p.tokens[k] > from) out.push_back(p.tokens[k] - p.tokens[k - 1]);
    }
  }
  return out;
}

}  // namespace ds4::loadgen
