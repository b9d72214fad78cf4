// hydragen-walkthrough: the LSE trick printed step by step (docs/lse-trick.md). Everything but main()
// lives in hydragen_walkthrough_lib (walkthrough/walkthrough.hpp).
#include <iostream>

#include "walkthrough/walkthrough.hpp"

int main(int argc, char** argv) { return hydragen::walkthrough::run_cli(argc, argv, std::cout, std::cerr); }
