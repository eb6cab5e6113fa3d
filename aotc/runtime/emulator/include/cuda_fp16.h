// cuda_fp16.h for the CPU emulator: __half, __half2 and their intrinsics
// (aotc_emulator_half.h, which also holds cuda_bf16.h's types, as CUDA's
// cuda_bf16.h includes cuda_fp16.h).
#pragma once
#include "aotc_emulator_half.h"
