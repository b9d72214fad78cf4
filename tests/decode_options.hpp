#pragma once
// The decoder tests' options (decode_batch.hpp on the host, cuda/decode_test.cpp on the GPU).
#include "decode/decoder.hpp"

namespace hydragen::decode {

// B sequences after a shared prompt of P tokens, each with room for its question and `gen` tokens.
inline DecoderOptions question_options(Mode mode, int batch, int prompt, int question, int gen) {
  DecoderOptions o;
  o.mode = mode;
  o.batch = batch;
  o.prompt_len = prompt;
  o.suffix_capacity = question + gen;
  o.max_q_len = question;
  return o;
}

}  // namespace hydragen::decode
