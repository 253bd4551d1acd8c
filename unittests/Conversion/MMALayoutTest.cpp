//===- MMALayoutTest.cpp - The MMA fragment maps and the GEMM tiling ------===//
//
// What the GPU GEMM kernel computes, replayed with integers: the fragment
// maps cover each matrix element once, a warp's MMA assembled from them is
// a matrix product, and the kernel's tiling (blocks, warps, tiles, staging
// copies) writes every output element exactly once and stages every
// operand element exactly once per K step. A GEMM built from these maps
// matches a plain C++ one on random FP8 values, including partial tiles.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToGPU/MMALayout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace mlir::te::mma;

namespace {

template <typename F>
std::set<std::pair<int, int>> cover(int elements, F element) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < elements; ++i) {
      Coord<int> c = element(lane, i);
      EXPECT_TRUE(seen.insert({c.row, c.col}).second)
          << "lane " << lane << " element " << i << " repeats (" << c.row
          << ", " << c.col << ")";
    }
  }
  return seen;
}

TEST(MMALayout, FragmentsCoverTheirMatricesOnce) {
  EXPECT_EQ(cover(kAElements, aElement<int>).size(), size_t(kM * kK));
  EXPECT_EQ(cover(kBElements, bElement<int>).size(), size_t(kK * kN));
  EXPECT_EQ(cover(kCElements, cElement<int>).size(), size_t(kM * kN));
  for (int lane = 0; lane < kWarpSize; ++lane) {
    // A register holds two consecutive elements of a row (A, C) or of a
    // column (B): what the 32-bit packing assumes.
    for (int i = 0; i < kAElements; i += 2) {
      EXPECT_EQ(aElement(lane, i).row, aElement(lane, i + 1).row);
      EXPECT_EQ(aElement(lane, i).col + 1, aElement(lane, i + 1).col);
    }
    for (int i = 0; i < kBElements; i += 2) {
      EXPECT_EQ(bElement(lane, i).col, bElement(lane, i + 1).col);
      EXPECT_EQ(bElement(lane, i).row + 1, bElement(lane, i + 1).row);
    }
  }
}

/// One warp's MMA from fragments: each lane's accumulator element is the
/// dot product of its row of A and column of B, gathered from the lanes
/// that hold them.
std::vector<float> warpMMA(const std::vector<float> &a,
                           const std::vector<float> &b) {
  float fragA[kWarpSize][kAElements], fragB[kWarpSize][kBElements];
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < kAElements; ++i) {
      Coord<int> c = aElement(lane, i);
      fragA[lane][i] = a[c.row * kK + c.col];
    }
    for (int i = 0; i < kBElements; ++i) {
      Coord<int> c = bElement(lane, i);
      fragB[lane][i] = b[c.row * kN + c.col];
    }
  }
  auto findA = [&](int row, int k) {
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int i = 0; i < kAElements; ++i)
        if (aElement(lane, i).row == row && aElement(lane, i).col == k)
          return fragA[lane][i];
    ADD_FAILURE() << "no lane holds A(" << row << ", " << k << ")";
    return 0.0f;
  };
  auto findB = [&](int k, int col) {
    for (int lane = 0; lane < kWarpSize; ++lane)
      for (int i = 0; i < kBElements; ++i)
        if (bElement(lane, i).row == k && bElement(lane, i).col == col)
          return fragB[lane][i];
    ADD_FAILURE() << "no lane holds B(" << k << ", " << col << ")";
    return 0.0f;
  };
  std::vector<float> d(kM * kN, -1.0f);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < kCElements; ++i) {
      Coord<int> c = cElement(lane, i);
      float sum = 0;
      for (int k = 0; k < kK; ++k)
        sum += findA(c.row, k) * findB(k, c.col);
      d[c.row * kN + c.col] = sum;
    }
  }
  return d;
}

TEST(MMALayout, AWarpMMAIsAMatrixProduct) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<float> a(kM * kK), b(kK * kN);
  for (float &x : a)
    x = static_cast<float>(small(random));
  for (float &x : b)
    x = static_cast<float>(small(random));
  std::vector<float> d = warpMMA(a, b);
  for (int r = 0; r < kM; ++r) {
    for (int c = 0; c < kN; ++c) {
      float sum = 0;
      for (int k = 0; k < kK; ++k)
        sum += a[r * kK + k] * b[k * kN + c];
      EXPECT_EQ(d[r * kN + c], sum) << "(" << r << ", " << c << ")";
    }
  }
}

TEST(GemmTiling, EveryOutputElementOnceAndEveryStagedElementOnce) {
  using T = GemmTiling;
  std::set<std::pair<int, int>> outputs;
  for (int thread = 0; thread < T::kThreads; ++thread)
    for (int mi = 0; mi < T::kTilesM; ++mi)
      for (int ni = 0; ni < T::kTilesN; ++ni)
        for (int i = 0; i < kCElements; ++i) {
          Coord<int> c = T::outputElement(1, 2, thread, mi, ni, i);
          EXPECT_GE(c.row, T::kBlockM);
          EXPECT_LT(c.row, 2 * T::kBlockM);
          EXPECT_GE(c.col, 2 * T::kBlockN);
          EXPECT_LT(c.col, 3 * T::kBlockN);
          EXPECT_TRUE(outputs.insert({c.row, c.col}).second);
        }
  EXPECT_EQ(outputs.size(), size_t(T::kBlockM * T::kBlockN));
  for (bool kContiguous : {true, false}) {
    std::set<std::pair<int, int>> staged;
    for (int thread = 0; thread < T::kThreads; ++thread)
      for (int j = 0; j < T::kCopies; ++j) {
        Coord<int> c = T::stagedElement(thread + j * T::kThreads, kContiguous);
        EXPECT_LT(c.row, T::kBlockM);
        EXPECT_LT(c.col, T::kBlockK);
        EXPECT_TRUE(staged.insert({c.row, c.col}).second);
      }
    EXPECT_EQ(staged.size(), size_t(T::kBlockM * T::kBlockK));
    // Consecutive threads, consecutive addresses along the stored layout.
    Coord<int> first = T::stagedElement(0, kContiguous);
    Coord<int> second = T::stagedElement(1, kContiguous);
    EXPECT_EQ(kContiguous ? second.col - first.col : second.row - first.row, 1);
  }
}

/// The kernel's whole computation replayed: blocks, K steps staged into
/// [rows][k] tiles with zeros past the edges, warps' MMAs over the staged
/// tiles, outputs written where they fall inside D.
std::vector<float> tiledGemm(const std::vector<float> &a,
                             const std::vector<float> &b, int m, int n, int k) {
  using T = GemmTiling;
  std::vector<float> d(m * n, NAN);
  int blocksM = (m + T::kBlockM - 1) / T::kBlockM;
  int blocksN = (n + T::kBlockN - 1) / T::kBlockN;
  for (int bm = 0; bm < blocksM; ++bm) {
    for (int bn = 0; bn < blocksN; ++bn) {
      std::vector<float> acc(T::kThreads * T::kTilesM * T::kTilesN * kCElements,
                             0.0f);
      for (int k0 = 0; k0 < k; k0 += T::kBlockK) {
        float tileA[T::kBlockM][T::kBlockK], tileB[T::kBlockN][T::kBlockK];
        for (int thread = 0; thread < T::kThreads; ++thread) {
          for (int j = 0; j < T::kCopies; ++j) {
            Coord<int> s = T::stagedElement(thread + j * T::kThreads, true);
            int gr = bm * T::kBlockM + s.row, gk = k0 + s.col;
            tileA[s.row][s.col] = gr < m && gk < k ? a[gr * k + gk] : 0.0f;
            Coord<int> t = T::stagedElement(thread + j * T::kThreads, false);
            int gn = bn * T::kBlockN + t.row, gk2 = k0 + t.col;
            tileB[t.row][t.col] = gn < n && gk2 < k ? b[gk2 * n + gn] : 0.0f;
          }
        }
        for (int thread = 0; thread < T::kThreads; ++thread) {
          int warp = thread / kWarpSize, lane = thread % kWarpSize;
          int wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;
          for (int kk = 0; kk < T::kBlockK; kk += kK)
            for (int mi = 0; mi < T::kTilesM; ++mi)
              for (int ni = 0; ni < T::kTilesN; ++ni)
                for (int i = 0; i < kCElements; ++i) {
                  Coord<int> c = cElement(lane, i);
                  float sum = 0;
                  for (int kx = 0; kx < kK; ++kx)
                    sum += tileA[wm * T::kWarpM + mi * kM + c.row][kk + kx] *
                           tileB[wn * T::kWarpN + ni * kN + c.col][kk + kx];
                  acc[((thread * T::kTilesM + mi) * T::kTilesN + ni) *
                          kCElements +
                      i] += sum;
                }
        }
      }
      for (int thread = 0; thread < T::kThreads; ++thread)
        for (int mi = 0; mi < T::kTilesM; ++mi)
          for (int ni = 0; ni < T::kTilesN; ++ni)
            for (int i = 0; i < kCElements; ++i) {
              Coord<int> c = T::outputElement(bm, bn, thread, mi, ni, i);
              if (c.row < m && c.col < n)
                d[c.row * n + c.col] =
                    acc[((thread * T::kTilesM + mi) * T::kTilesN + ni) *
                            kCElements +
                        i];
            }
    }
  }
  return d;
}

TEST(GemmTiling, TheTiledGemmIsAMatrixProductWithPartialTiles) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> small(-16, 16);
  for (auto [m, n, k] : {std::tuple{64, 64, 32}, std::tuple{100, 72, 50},
                         std::tuple{17, 130, 70}}) {
    std::vector<float> a(m * k), b(k * n);
    for (float &x : a)
      x = static_cast<float>(small(random)) / 4;
    for (float &x : b)
      x = static_cast<float>(small(random)) / 4;
    std::vector<float> d = tiledGemm(a, b, m, n, k);
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c) {
        float sum = 0;
        for (int x = 0; x < k; ++x)
          sum += a[r * k + x] * b[x * n + c];
        // Small integers / 4: every partial sum is exact in f32.
        ASSERT_EQ(d[r * n + c], sum)
            << m << "x" << n << "x" << k << " at (" << r << ", " << c << ")";
      }
  }
}

} // namespace

namespace {

using Lanes = std::vector<std::vector<float>>;

/// One warp's MMA on per-lane fragments: D = A B + C, each lane's elements
/// placed by the maps.
Lanes laneMMA(const Lanes &a, const Lanes &b, const Lanes &c) {
  std::vector<float> am(kM * kK), bm(kK * kN);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < kAElements; ++i) {
      Coord<int> e = aElement(lane, i);
      am[e.row * kK + e.col] = a[lane][i];
    }
    for (int i = 0; i < kBElements; ++i) {
      Coord<int> e = bElement(lane, i);
      bm[e.row * kN + e.col] = b[lane][i];
    }
  }
  Lanes d = c;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < kCElements; ++i) {
      Coord<int> e = cElement(lane, i);
      for (int k = 0; k < kK; ++k)
        d[lane][i] += am[e.row * kK + k] * bm[k * kN + e.col];
    }
  }
  return d;
}

} // namespace

TEST(FlashTiling, AccumulatorElementsAreTheAElementsOfTheNextProduct) {
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int i = 0; i < kAElements; ++i) {
      AccumulatorSource source = accumulatorForA(i);
      Coord<int> a = aElement(lane, i);
      Coord<int> c = cElement(lane, source.element);
      EXPECT_EQ(a.row, c.row) << "lane " << lane << " element " << i;
      EXPECT_EQ(a.col, c.col + kN * source.tile)
          << "lane " << lane << " element " << i;
    }
  }
}

// One warp's share of the attention kernel, replayed on integers with the
// kernel's own index formulas: S = Q K^T from Q fragments (rows of Q) and
// K fragments (K stored [key][d], read as B), then S fed back as the A
// operand through accumulatorForA against V fragments (V stored [key][d]):
// the result is (Q K^T) V.
TEST(FlashTiling, TwoChainedProductsAreQKTransposeV) {
  constexpr int kD = 32, kDv = 24;
  constexpr int kKeys = FlashTiling::kBlockKV;
  std::mt19937 random(11);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> q(kM * kD), k(kKeys * kD), v(kKeys * kDv);
  for (std::vector<float> *m : {&q, &k, &v})
    for (float &x : *m)
      x = static_cast<float>(small(random));

  Lanes zero(kWarpSize, std::vector<float>(kCElements, 0));
  std::vector<Lanes> s(FlashTiling::kTilesKV, zero);
  for (int ni = 0; ni < FlashTiling::kTilesKV; ++ni) {
    for (int kk = 0; kk < kD; kk += kK) {
      Lanes a(kWarpSize, std::vector<float>(kAElements));
      Lanes b(kWarpSize, std::vector<float>(kBElements));
      for (int lane = 0; lane < kWarpSize; ++lane) {
        for (int i = 0; i < kAElements; ++i) {
          Coord<int> e = aElement(lane, i);
          a[lane][i] = q[e.row * kD + kk + e.col];
        }
        for (int i = 0; i < kBElements; ++i) {
          Coord<int> e = bElement(lane, i);
          b[lane][i] = k[(ni * kN + e.col) * kD + kk + e.row];
        }
      }
      s[ni] = laneMMA(a, b, s[ni]);
    }
  }
  std::vector<Lanes> o(kDv / kN, zero);
  for (int t = 0; t < kKeys / kK; ++t) {
    Lanes a(kWarpSize, std::vector<float>(kAElements));
    for (int lane = 0; lane < kWarpSize; ++lane) {
      for (int i = 0; i < kAElements; ++i) {
        AccumulatorSource source = accumulatorForA(i);
        a[lane][i] = s[2 * t + source.tile][lane][source.element];
      }
    }
    for (int nd = 0; nd < kDv / kN; ++nd) {
      Lanes b(kWarpSize, std::vector<float>(kBElements));
      for (int lane = 0; lane < kWarpSize; ++lane) {
        for (int i = 0; i < kBElements; ++i) {
          Coord<int> e = bElement(lane, i);
          b[lane][i] = v[(t * kK + e.row) * kDv + nd * kN + e.col];
        }
      }
      o[nd] = laneMMA(a, b, o[nd]);
    }
  }
  for (int nd = 0; nd < kDv / kN; ++nd) {
    for (int lane = 0; lane < kWarpSize; ++lane) {
      for (int i = 0; i < kCElements; ++i) {
        Coord<int> e = cElement(lane, i);
        float want = 0;
        for (int key = 0; key < kKeys; ++key) {
          float score = 0;
          for (int d = 0; d < kD; ++d)
            score += q[e.row * kD + d] * k[key * kD + d];
          want += score * v[key * kDv + nd * kN + e.col];
        }
        EXPECT_EQ(o[nd][lane][i], want)
            << "row " << e.row << " column " << nd * kN + e.col;
      }
    }
  }
}

// ldmatrix (x2) as PTX defines it, on a [key][d] tile of integers, against
// the B fragments the plain maps read element by element: the row
// addresses of keyFragmentRow (K, not transposed) and valueFragmentRow (V,
// transposed) give every lane exactly its B elements.
TEST(FlashTiling, LoadMatrixGivesTheBFragments) {
  constexpr int kKeys = FlashTiling::kBlockKV, kD = 32;
  std::vector<int> tile(kKeys * kD);
  for (size_t i = 0; i < tile.size(); ++i)
    tile[i] = static_cast<int>(i);
  // The elements a lane receives: tile j's row comes from the address
  // lane j * 8 + row supplied.
  auto loadMatrix = [&](auto rowOf, int lane, bool transpose) {
    std::vector<int> values;
    for (int j = 0; j < 2; ++j) {
      for (int e = 0; e < 2; ++e) {
        Coord<int> at = loadMatrixElement(lane, e, transpose);
        Coord<int> row = rowOf(j * 8 + at.row);
        values.push_back(tile[row.row * kD + row.col + at.col]);
      }
    }
    return values;
  };
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int ni = 0; ni < FlashTiling::kTilesKV; ++ni) {
      for (int kk = 0; kk < kD; kk += kK) {
        auto rowOf = [&](int supplier) {
          return FlashTiling::keyFragmentRow(supplier, ni, kk);
        };
        std::vector<int> loaded = loadMatrix(rowOf, lane, false);
        for (int i = 0; i < kBElements; ++i) {
          Coord<int> e = bElement(lane, i);
          EXPECT_EQ(loaded[i], tile[(ni * kN + e.col) * kD + kk + e.row])
              << "K: lane " << lane << " tile " << ni << " k " << kk;
        }
      }
    }
    for (int step = 0; step < kKeys / kK; ++step) {
      for (int nd = 0; nd < kD / kN; ++nd) {
        auto rowOf = [&](int supplier) {
          return FlashTiling::valueFragmentRow(supplier, step, nd);
        };
        std::vector<int> loaded = loadMatrix(rowOf, lane, true);
        for (int i = 0; i < kBElements; ++i) {
          Coord<int> e = bElement(lane, i);
          EXPECT_EQ(loaded[i], tile[(step * kK + e.row) * kD + nd * kN + e.col])
              << "V: lane " << lane << " step " << step << " tile " << nd;
        }
      }
    }
  }
}
