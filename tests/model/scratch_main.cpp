#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>
#include <nlohmann/json.hpp>
#include "ds4/engine.h"
using namespace ds4;
int main(int argc, char** argv) {
  EngineOptions o; o.model_path = argv[1]; o.qat_simulation = false; o.f16_kv_rows = false;
  auto e = Engine::open(o);
  if (!e.is_ok()) { printf("%s\n", e.status().message().c_str()); return 1; }
  auto j = nlohmann::json::parse(std::ifstream(argv[2]));
  std::ifstream lf(argv[3], std::ios::binary);
  std::vector<float> ref_all((std::istreambuf_iterator<char>(lf)), {});
  int ci = 0;
  for (auto& c : j["cases"]) {
    std::vector<int> toks = c["tokens"].get<std::vector<int>>();
    SessionOptions so; so.n_ctx = 4096; so.prefill_chunk = 64;
    auto s = std::move((*e)->create_session(so)).value();
    std::vector<float> all;
    auto st = s->append(toks, &all);
    if (!st.is_ok()) { printf("%s\n", st.status().message().c_str()); return 1; }
    int V = (*e)->info().n_vocab;
    const float* ref = reinterpret_cast<const float*>(ref_all.data()) ;
    // logits file is float32 bytes read as chars; reinterpret
    std::ifstream lf2(argv[3], std::ios::binary);
    std::vector<float> R(V); lf2.seekg((int64_t)ci * V * 4); lf2.read((char*)R.data(), V*4);
    auto L = s->logits();
    double num=0, den=0; for (int i=0;i<V;++i){ double d=L[i]-R[i]; num+=d*d; den+=R[i]*R[i]; }
    int mism=0;
    for (size_t p=0;p<toks.size();++p){ double mx=0; for(int k=0;k<8;++k){ int id=c["topk_ids"][p][k]; double d=std::fabs(all[p*V+id]-c["topk_logits"][p][k].get<double>()); if(d>mx) mx=d;} if (mx>1e-3 && ci==1) printf("   pos %zu maxdiff %.4g\n",p,mx);} 
    for (size_t p=0;p<toks.size();++p){ int best=0; for(int i=1;i<V;++i) if (all[p*V+i]>all[p*V+best]) best=i; if (best != c["topk_ids"][p][0].get<int>()) { if (mism<5) printf("  pos %zu: %d vs %d\n", p, best, c["topk_ids"][p][0].get<int>()); ++mism;} }
    // greedy 32
    std::vector<int> gen; for (int k=0;k<32;++k){ int t = argmax(s->logits()); gen.push_back(t); (void)s->eval(t);} 
    auto ref_cont = c["continuation_without_cache"].get<std::vector<int>>();
    int first_diff=-1; for (int k=0;k<32;++k) if (gen[k]!=ref_cont[k]) {first_diff=k;break;}
    printf("case %d len %zu: rel L2 %.3g, top1 mismatches %d, first greedy diff %d\n", ci, toks.size(), std::sqrt(num/den), mism, first_diff);
    ++ci;
    (void)ref;
  }
}
