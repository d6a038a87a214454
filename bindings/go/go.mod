module simdex.dev/simdex

go 1.19
