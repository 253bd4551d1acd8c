//===- LibraryCallsTest.cpp - Library-call parameters, both ways ---------===//
//
// The structs of te/ABI/LibraryCalls.h are what the compiler writes and the
// runtime reads: each encodes to the text it decodes from, and the decoder
// refuses what the runtime could not run.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/LibraryCalls.h"

#include <gtest/gtest.h>

#include <array>

using namespace te::abi;

namespace {

TEST(LibraryCalls, MatmulRoundTrips) {
  MatmulCall call;
  call.m = 128;
  call.n = 64;
  call.k = 96;
  call.a = "f8E4M3FN";
  call.b = "f8E5M2";
  call.d = "bf16";
  call.bias = "f32";
  call.epilogue = MatmulCall::Epilogue::GeluBias;
  std::string text = call.encode();
  EXPECT_EQ(text, "m=128,n=64,k=96,a=f8E4M3FN,b=f8E5M2,d=bf16,bias=f32,"
                  "epilogue=gelu_bias,layout=TN,accumulate=0");
  MatmulCall back;
  std::string error;
  ASSERT_TRUE(MatmulCall::decode(text, back, error)) << error;
  EXPECT_EQ(back.encode(), text);
  EXPECT_EQ(back.m, 128);
  EXPECT_EQ(back.bias, "f32");
  EXPECT_TRUE(back.hasBiasInput());
  EXPECT_FALSE(back.hasBiasGrad());

  call.bias.clear();
  call.epilogue = MatmulCall::Epilogue::None;
  ASSERT_TRUE(MatmulCall::decode(call.encode(), back, error)) << error;
  EXPECT_EQ(back.bias, "");
  EXPECT_EQ(back.encode(), call.encode());
  // A bias without its epilogue is refused: the runtime would drop it.
  call.bias = "bf16";
  EXPECT_FALSE(MatmulCall::decode(call.encode(), back, error));
  EXPECT_NE(error.find("the epilogue and the bias disagree"),
            std::string::npos);

  // High-precision operands in every layout, with accumulation and the
  // backward's epilogues.
  MatmulCall wide;
  wide.m = 40;
  wide.n = 24;
  wide.k = 64;
  wide.a = wide.b = "bf16";
  wide.d = "f32";
  wide.bias = "f32";
  wide.epilogue = MatmulCall::Epilogue::BGradB;
  wide.layout = "NT";
  wide.accumulate = true;
  ASSERT_TRUE(MatmulCall::decode(wide.encode(), back, error)) << error;
  EXPECT_EQ(back.encode(), wide.encode());
  EXPECT_EQ(back.layout, "NT");
  EXPECT_TRUE(back.accumulate);
  EXPECT_TRUE(back.hasBiasGrad());
  EXPECT_EQ(back.getBiasLength(), 40);
  wide.epilogue = MatmulCall::Epilogue::DGeluBGrad;
  ASSERT_TRUE(MatmulCall::decode(wide.encode(), back, error)) << error;
  EXPECT_TRUE(back.hasAuxInput());
  EXPECT_EQ(back.getBiasLength(), 24);
  wide.bias.clear();
  wide.epilogue = MatmulCall::Epilogue::GeluAux;
  ASSERT_TRUE(MatmulCall::decode(wide.encode(), back, error)) << error;
  EXPECT_TRUE(back.hasAuxOutput());
}

// Parameters written before the call had a layout and accumulation still
// decode: TE's TN layout, no accumulation.
TEST(LibraryCalls, MatmulWithoutLayoutIsTN) {
  MatmulCall call;
  std::string error;
  ASSERT_TRUE(MatmulCall::decode("m=1,n=8,k=16,a=f8E4M3FN,b=f8E4M3FN,d=bf16,"
                                 "bias=none,epilogue=none",
                                 call, error))
      << error;
  EXPECT_EQ(call.layout, "TN");
  EXPECT_FALSE(call.accumulate);
}

TEST(LibraryCalls, SdpaRoundTripsEveryScaleExactly) {
  SdpaCall call;
  call.b = 2;
  call.hq = 16;
  call.hkv = 4;
  call.sq = 1024;
  call.skv = 1000;
  call.d = 64;
  call.dtype = "bf16";
  call.layout = "sbhd";
  call.bottomRight = true;
  call.left = 50;
  call.right = 0;
  call.stats = true;
  for (float scale : {0.125f, 0.0883883476f, 1e-30f, 3.0e38f, -2.5f}) {
    call.scale = scale;
    std::string text = call.encode();
    SdpaCall back;
    std::string error;
    ASSERT_TRUE(SdpaCall::decode(text, back, error)) << text << ": " << error;
    EXPECT_EQ(back.scale, scale) << text;
    EXPECT_EQ(back.encode(), text);
  }
  call.scale = 0.125f;
  EXPECT_EQ(call.encode(), "b=2,hq=16,hkv=4,sq=1024,skv=1000,d=64,dtype=bf16,"
                           "layout=sbhd,scale=3e000000,align=bottom_right,"
                           "left=50,right=0,stats=1");
}

TEST(LibraryCalls, DecodersRefuseWhatCannotRun) {
  const std::pair<const char *, const char *> matmuls[] = {
      {"", "invalid parameter ''"},
      {"m=0,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=f32,bias=none,epilogue=none",
       "invalid size m=0"},
      {"m=1,n=1,k=1,a=bf16,b=f8E4M3FN,d=f32,bias=none,epilogue=none",
       "invalid types a=bf16, b=f8E4M3FN; expected both FP8 or both the "
       "same"},
      {"m=1,n=1,k=1,a=f16,b=bf16,d=f32,bias=none,epilogue=none",
       "invalid types a=f16, b=bf16"},
      {"m=1,n=1,k=1,a=i8,b=i8,d=f32,bias=none,epilogue=none",
       "invalid type a=i8"},
      {"m=1,n=1,k=1,a=f16,b=f16,d=bf16,bias=none,epilogue=none",
       "invalid type d=bf16 with f16 operands; expected f16 or f32"},
      {"m=1,n=1,k=1,a=f32,b=f32,d=f16,bias=none,epilogue=none",
       "invalid type d=f16 with f32 operands; expected f32"},
      {"m=1,n=8,k=1,a=bf16,b=bf16,d=bf16,bias=f32,epilogue=bias",
       "invalid bias=f32 with bf16 operands; expected D's type bf16"},
      {"m=1,n=8,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=bf16,"
       "epilogue=dgelu_bgrad",
       "invalid epilogue 'dgelu_bgrad' with FP8 operands"},
      {"m=1,n=12,k=1,a=bf16,b=bf16,d=bf16,bias=none,epilogue=gelu_aux",
       "GELU matrix needs n a multiple of 8, got n=12"},
      {"m=1,n=8,k=1,a=bf16,b=bf16,d=bf16,bias=none,epilogue=dgelu_bgrad",
       "the epilogue and the bias disagree"},
      {"m=1,n=8,k=1,a=bf16,b=bf16,d=bf16,bias=none,epilogue=none,"
       "layout=TX",
       "invalid layout 'TX'; expected TN, NN, NT or TT"},
      {"m=1,n=8,k=1,a=bf16,b=bf16,d=bf16,bias=none,epilogue=none,"
       "accumulate=yes",
       "invalid accumulate 'yes'; expected 0 or 1"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=f32,bias=none,epilogue=relu",
       "invalid epilogue 'relu'"}};
  for (const auto &[text, expected] : matmuls) {
    MatmulCall call;
    std::string error;
    EXPECT_FALSE(MatmulCall::decode(text, call, error)) << text;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
  const std::pair<const char *, const char *> sdpas[] = {
      {"b=1", "parameter 'hq' is missing"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid parameter 'scale='"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=123456789,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid scale '123456789'"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=thd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid layout 'thd'"}};
  for (const auto &[text, expected] : sdpas) {
    SdpaCall call;
    std::string error;
    EXPECT_FALSE(SdpaCall::decode(text, call, error)) << text;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

TEST(LibraryCalls, CollectivesRoundTrip) {
  const std::pair<const char *, const char *> calls[] = {
      {"collective.all_reduce",
       "group=world,size=2,ranks=blocks,dtype=f32,shape=4x8,reduce=sum"},
      {"collective.all_gather",
       "group=tp,size=2,ranks=0_2_1_3,dtype=f8E4M3FN,shape=4x8,dim=0"},
      {"collective.reduce_scatter",
       "group=tp,size=2,ranks=blocks,dtype=bf16,shape=4x8,dim=1,reduce=avg"},
      {"collective.all_to_all", "group=cp,size=2,ranks=blocks,dtype=f32,"
                                "shape=2x4x6,split_dim=1,concat_dim=2"},
      {"collective.permute",
       "group=cp,size=4,ranks=blocks,dtype=f32,shape=scalar,route=shift_-1"},
      {"collective.permute",
       "group=cp,size=4,ranks=blocks,dtype=i8,shape=3,route=pairs_0_1_1_0"},
      {"collective.group_rank", "group=cp,size=2,ranks=blocks"}};
  for (const auto &[function, text] : calls) {
    CollectiveCall call;
    std::string error;
    ASSERT_TRUE(CollectiveCall::decode(function, text, 8, call, error))
        << function << " " << text << ": " << error;
    EXPECT_EQ(call.getFunction(), function);
    EXPECT_EQ(call.encode(), text);
  }
}

TEST(LibraryCalls, CollectiveDecoderRefusesWhatCannotRun) {
  const std::array<const char *, 3> cases[] = {
      {"collective.broadcast", "group=a,size=1,ranks=blocks",
       "unknown collective 'collective.broadcast'"},
      {"collective.all_gather",
       "group=a,size=2,ranks=blocks,dtype=f32,shape=2x3,dim=2",
       "invalid dim '2' for an input of rank 2"},
      {"collective.all_reduce",
       "group=a,size=2,ranks=blocks,dtype=i8,shape=2,reduce=avg",
       "reduce avg needs a floating-point dtype, got i8"},
      {"collective.all_reduce",
       "group=a,size=2,ranks=blocks,dtype=f8E8M0FNU,shape=2,reduce=max",
       "f8E8M0FNU values (scales) cannot be reduced"},
      {"collective.all_reduce",
       "group=a,size=2,ranks=blocks,dtype=f7,shape=2,reduce=max",
       "invalid dtype 'f7'"},
      {"collective.permute",
       "group=a,size=2,ranks=blocks,dtype=f32,shape=1x1x1x1x1x1x1x1x1,"
       "route=shift_1",
       "invalid shape '1x1x1x1x1x1x1x1x1'"}};
  for (const auto &[function, text, expected] : cases) {
    CollectiveCall call;
    std::string error;
    EXPECT_FALSE(CollectiveCall::decode(function, text, 8, call, error))
        << text;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

} // namespace
