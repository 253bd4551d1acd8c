//===- MMALayoutTest.cpp - The MMA fragment maps and the GEMM tiling ------===//
//
// What the GPU GEMM kernel computes, replayed with integers: the fragment
// maps cover each matrix element once, a warp's MMA assembled from them is
// a matrix product, and the kernel's tiling (blocks, warps, tiles, staging
// copies) writes every output element exactly once and stages every
// operand element exactly once per K step. A GEMM built from these maps
// matches a plain C++ one on random FP8 values, including partial tiles.
// The attention kernels' chained products are replayed the same way: the
// forward's S = Q K^T feeding P V, and one query tile of the backward (its
// products other than dP^T = V dO^T, which has S^T's shape, the A
// fragments of ldmatrix, dQ split over the warps).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToGPU/MMALayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
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

namespace {

/// ldmatrix (x2) as PTX defines it on a [row][column] tile of `stride`
/// columns: lane `lane`'s four elements when each lane `supplier` < 16
/// supplies the row address rowOf(supplier).
template <typename RowOf>
std::vector<float> loadMatrixX2(const std::vector<float> &tile, int stride,
                                RowOf rowOf, int lane, bool transpose) {
  std::vector<float> values;
  for (int j = 0; j < 2; ++j) {
    for (int e = 0; e < 2; ++e) {
      Coord<int> at = loadMatrixElement(lane, e, transpose);
      Coord<int> row = rowOf(j * 8 + at.row);
      values.push_back(tile[row.row * stride + row.col + at.col]);
    }
  }
  return values;
}

/// The A fragment of rows [row, row + 16) and columns [col, col + 16) of a
/// [row][column] tile, loaded as the kernel does (two ldmatrix x2 with
/// aFragmentRow's addresses).
std::vector<float> loadAFragment(const std::vector<float> &tile, int stride,
                                 int lane, int row, int col) {
  std::vector<float> fragment;
  for (int half = 0; half < 2; ++half) {
    auto rowOf = [&](int supplier) {
      Coord<int> at = aFragmentRow(supplier, half);
      return Coord<int>{row + at.row, col + at.col};
    };
    std::vector<float> part = loadMatrixX2(tile, stride, rowOf, lane, false);
    fragment.insert(fragment.end(), part.begin(), part.end());
  }
  return fragment;
}

/// The B fragment of k step `step` and columns [col, col + 8) of a staged
/// [k][n] tile, read transposed as the kernel does (valueFragmentRow).
std::vector<float> loadTransposedB(const std::vector<float> &tile, int stride,
                                   int lane, int step, int col) {
  auto rowOf = [&](int supplier) {
    Coord<int> at = FlashTiling::valueFragmentRow(supplier, step, 0);
    return Coord<int>{at.row, at.col + col};
  };
  return loadMatrixX2(tile, stride, rowOf, lane, true);
}

} // namespace

// ldmatrix (x2) as PTX defines it, on a [key][d] tile of integers, against
// the B fragments the plain maps read element by element: the row
// addresses of keyFragmentRow (K, not transposed) and valueFragmentRow (V,
// transposed) give every lane exactly its B elements.
TEST(FlashTiling, LoadMatrixGivesTheBFragments) {
  constexpr int kKeys = FlashTiling::kBlockKV, kD = 32;
  std::vector<float> tile(kKeys * kD);
  for (size_t i = 0; i < tile.size(); ++i)
    tile[i] = static_cast<float>(i);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int ni = 0; ni < FlashTiling::kTilesKV; ++ni) {
      for (int kk = 0; kk < kD; kk += kK) {
        auto rowOf = [&](int supplier) {
          return FlashTiling::keyFragmentRow(supplier, ni, kk);
        };
        std::vector<float> loaded = loadMatrixX2(tile, kD, rowOf, lane, false);
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
        std::vector<float> loaded = loadMatrixX2(tile, kD, rowOf, lane, true);
        for (int i = 0; i < kBElements; ++i) {
          Coord<int> e = bElement(lane, i);
          EXPECT_EQ(loaded[i], tile[(step * kK + e.row) * kD + nd * kN + e.col])
              << "V: lane " << lane << " step " << step << " tile " << nd;
        }
      }
    }
  }
}

// The A fragments the matrix loads of aFragmentRow give are aElement's.
TEST(FlashBackwardTiling, LoadMatrixGivesTheAFragments) {
  constexpr int kRows = 32, kCols = 48;
  std::vector<float> tile(kRows * kCols);
  for (size_t i = 0; i < tile.size(); ++i)
    tile[i] = static_cast<float>(i);
  for (int lane = 0; lane < kWarpSize; ++lane) {
    for (int row = 0; row < kRows; row += kM) {
      for (int col = 0; col < kCols; col += kK) {
        std::vector<float> loaded = loadAFragment(tile, kCols, lane, row, col);
        for (int i = 0; i < kAElements; ++i) {
          Coord<int> e = aElement(lane, i);
          EXPECT_EQ(loaded[i], tile[(row + e.row) * kCols + col + e.col])
              << "lane " << lane << " element " << i;
        }
      }
    }
  }
}

// One query tile of the backward kernel's block, replayed on integers with
// the kernel's formulas, for a narrow head (64 query rows per tile, one
// warp per row group of dQ) and a wide one (16 rows, dQ's column tiles
// split over the warps, unevenly for d_qk = 112): per warp S^T = K Q^T
// (K's A fragments from the staged tile, Q's B fragments as the forward's
// K), then S^T as the A operand of dV += S^T dO and dK += S^T Q
// (accumulatorForA, dO and Q read transposed), and S through the shared
// [query][key] tile into dQ += S K. Every gradient equals its plain
// product, and each dQ element gets exactly one addition from the block.
TEST(FlashBackwardTiling, OneTileGivesTheGradientProducts) {
  using Tiling = FlashBackwardTiling;
  for (std::pair<int, int> dims : {std::pair{64, 32}, std::pair{112, 128}}) {
    int dqk = dims.first, dv = dims.second;
    SCOPED_TRACE("d_qk " + std::to_string(dqk) + ", d_v " + std::to_string(dv));
    int widest = std::max(dqk, dv);
    int blockQ = Tiling::blockQ(widest);
    int keys = Tiling::kBlockKV;
    std::mt19937 random(dqk);
    std::uniform_int_distribution<int> small(-2, 2);
    auto matrix = [&](int rows, int cols) {
      std::vector<float> m(rows * cols);
      for (float &x : m)
        x = static_cast<float>(small(random));
      return m;
    };
    std::vector<float> k = matrix(keys, dqk), q = matrix(blockQ, dqk),
                       dO = matrix(blockQ, dv);
    // The staged tiles, with the kernel's padding.
    auto staged = [&](const std::vector<float> &m, int rows, int cols) {
      std::vector<float> tile(rows * (cols + Tiling::kPad), -99);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          tile[r * (cols + Tiling::kPad) + c] = m[r * cols + c];
      return tile;
    };
    std::vector<float> kTile = staged(k, keys, dqk),
                       qTile = staged(q, blockQ, dqk),
                       doTile = staged(dO, blockQ, dv);
    int kStride = dqk + Tiling::kPad, dsStride = keys + Tiling::kPad;
    std::vector<float> dsTile(blockQ * dsStride, -99);
    auto want = [&](int key, int query) {
      float sum = 0;
      for (int d = 0; d < dqk; ++d)
        sum += k[key * dqk + d] * q[query * dqk + d];
      return sum;
    };

    for (int warp = 0; warp < Tiling::kWarps; ++warp) {
      Lanes zero(kWarpSize, std::vector<float>(kCElements, 0));
      std::vector<Lanes> s(blockQ / kN, zero);
      for (int kk = 0; kk < dqk; kk += kK) {
        Lanes a(kWarpSize);
        for (int lane = 0; lane < kWarpSize; ++lane)
          a[lane] = loadAFragment(kTile, kStride, lane, warp * kM, kk);
        for (int ni = 0; ni < blockQ / kN; ++ni) {
          Lanes b(kWarpSize, std::vector<float>(kBElements));
          for (int lane = 0; lane < kWarpSize; ++lane)
            for (int i = 0; i < kBElements; ++i) {
              Coord<int> e = bElement(lane, i);
              b[lane][i] = qTile[(ni * kN + e.col) * kStride + kk + e.row];
            }
          s[ni] = laneMMA(a, b, s[ni]);
        }
      }
      for (int ni = 0; ni < blockQ / kN; ++ni)
        for (int lane = 0; lane < kWarpSize; ++lane)
          for (int i = 0; i < kCElements; ++i) {
            Coord<int> e = cElement(lane, i);
            ASSERT_EQ(s[ni][lane][i], want(warp * kM + e.row, ni * kN + e.col));
            dsTile[(ni * kN + e.col) * dsStride + warp * kM + e.row] =
                s[ni][lane][i];
          }

      // dV += S^T dO and dK += S^T Q over the tile's queries.
      for (auto [tile, cols] :
           {std::pair{&doTile, dv}, std::pair{&qTile, dqk}}) {
        const std::vector<float> &operand = tile == &doTile ? dO : q;
        std::vector<Lanes> acc(cols / kN, zero);
        for (int step = 0; step < blockQ / kK; ++step) {
          Lanes a(kWarpSize, std::vector<float>(kAElements));
          for (int lane = 0; lane < kWarpSize; ++lane)
            for (int i = 0; i < kAElements; ++i) {
              AccumulatorSource from = accumulatorForA(i);
              a[lane][i] = s[2 * step + from.tile][lane][from.element];
            }
          for (int nd = 0; nd < cols / kN; ++nd) {
            Lanes b(kWarpSize);
            for (int lane = 0; lane < kWarpSize; ++lane)
              b[lane] = loadTransposedB(*tile, cols + Tiling::kPad, lane, step,
                                        nd * kN);
            acc[nd] = laneMMA(a, b, acc[nd]);
          }
        }
        for (int nd = 0; nd < cols / kN; ++nd)
          for (int lane = 0; lane < kWarpSize; ++lane)
            for (int i = 0; i < kCElements; ++i) {
              Coord<int> e = cElement(lane, i);
              float sum = 0;
              for (int query = 0; query < blockQ; ++query)
                sum += want(warp * kM + e.row, query) *
                       operand[query * cols + nd * kN + e.col];
              EXPECT_EQ(acc[nd][lane][i], sum) << "key " << warp * kM + e.row
                                               << " column " << nd * kN + e.col;
            }
      }
    }

    // dQ += S K: warp w's rows and column tiles, all keys of the block.
    std::vector<float> dq(blockQ * dqk, 0);
    std::vector<int> additions(blockQ * dqk, 0);
    for (int warp = 0; warp < Tiling::kWarps; ++warp) {
      int row = Tiling::dqRow(warp, widest);
      for (int tile = 0; tile < Tiling::dqTiles(widest, dqk); ++tile) {
        int column = Tiling::dqColumn(warp, tile, widest, dqk);
        if (column >= dqk)
          continue;
        Lanes acc(kWarpSize, std::vector<float>(kCElements, 0));
        for (int step = 0; step < keys / kK; ++step) {
          Lanes a(kWarpSize), b(kWarpSize);
          for (int lane = 0; lane < kWarpSize; ++lane) {
            a[lane] = loadAFragment(dsTile, dsStride, lane, row, step * kK);
            b[lane] = loadTransposedB(kTile, kStride, lane, step, column);
          }
          acc = laneMMA(a, b, acc);
        }
        for (int lane = 0; lane < kWarpSize; ++lane)
          for (int i = 0; i < kCElements; ++i) {
            Coord<int> e = cElement(lane, i);
            int at = (row + e.row) * dqk + column + e.col;
            dq[at] += acc[lane][i];
            ++additions[at];
          }
      }
    }
    for (int query = 0; query < blockQ; ++query)
      for (int d = 0; d < dqk; ++d) {
        float sum = 0;
        for (int key = 0; key < keys; ++key)
          sum += want(key, query) * k[key * dqk + d];
        EXPECT_EQ(additions[query * dqk + d], 1) << query << ", " << d;
        EXPECT_EQ(dq[query * dqk + d], sum) << query << ", " << d;
      }
  }
}

// The GEMM kernel's fragment loads: A from the staged [m][k] tile with
// aFragmentRow's addresses at the warp's rows, B from the staged [n][k]
// tile as attention reads K (keyFragmentRow) at the warp's columns; each
// lane gets exactly the elements the plain maps give it.
TEST(GemmTiling, LoadMatrixGivesEachWarpsFragments) {
  constexpr int kStride = GemmTiling::kBlockK + GemmTiling::kPad;
  std::vector<float> tile(GemmTiling::kBlockM * kStride);
  for (size_t i = 0; i < tile.size(); ++i)
    tile[i] = static_cast<float>(i);
  for (int warp = 0; warp < GemmTiling::kThreads / kWarpSize; ++warp) {
    int warpRow = warp / GemmTiling::kWarpsN,
        warpCol = warp % GemmTiling::kWarpsN;
    for (int kk = 0; kk < GemmTiling::kBlockK; kk += kK) {
      for (int lane = 0; lane < kWarpSize; ++lane) {
        for (int mi = 0; mi < GemmTiling::kTilesM; ++mi) {
          int row = warpRow * GemmTiling::kWarpM + mi * kM;
          std::vector<float> a = loadAFragment(tile, kStride, lane, row, kk);
          for (int i = 0; i < kAElements; ++i) {
            Coord<int> e = aElement(lane, i);
            EXPECT_EQ(a[i], tile[(row + e.row) * kStride + kk + e.col])
                << "A: warp " << warp << " lane " << lane << " tile " << mi;
          }
        }
        for (int ni = 0; ni < GemmTiling::kTilesN; ++ni) {
          auto rowOf = [&](int supplier) {
            Coord<int> at = FlashTiling::keyFragmentRow(supplier, ni, kk);
            return Coord<int>{at.row + warpCol * GemmTiling::kWarpN, at.col};
          };
          std::vector<float> b =
              loadMatrixX2(tile, kStride, rowOf, lane, false);
          for (int i = 0; i < kBElements; ++i) {
            Coord<int> e = bElement(lane, i);
            int n = warpCol * GemmTiling::kWarpN + ni * kN + e.col;
            EXPECT_EQ(b[i], tile[n * kStride + kk + e.row])
                << "B: warp " << warp << " lane " << lane << " tile " << ni;
          }
        }
      }
    }
  }
}
