// cuda_bf16.h for the CPU emulator: __nv_bfloat16, __nv_bfloat162 and their
// intrinsics (aotc_emulator_half.h, which also holds cuda_fp16.h's types).
#pragma once
#include "aotc_emulator_half.h"
