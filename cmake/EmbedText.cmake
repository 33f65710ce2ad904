# SPDX-License-Identifier: Apache-2.0
# Run as `cmake -DINPUT=... -DOUTPUT=... -DSYMBOL=... -P EmbedText.cmake`: writes a C++ file that
# defines `extern const char* const SYMBOL` holding the text of INPUT, so the store's DDL has one
# source of truth (schemas/store.sql) that is both shipped and compiled in.
file(READ "${INPUT}" content)
set(delimiter "zbkit_embed")
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT}; do not edit.\n"
     "extern const char* const ${SYMBOL};\n"
     "const char* const ${SYMBOL} = R\"${delimiter}(${content})${delimiter}\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
