// Precompiled for every LibTorch target of grafx (see grafx_use_pch in CMakeLists.txt).
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
