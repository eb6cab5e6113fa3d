// cuda_pipeline.h for the CPU emulator: its primitives (the deprecated
// nvcuda::experimental::pipeline class is not emulated).
#pragma once
#include "cuda_pipeline_primitives.h"
