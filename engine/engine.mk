# engine/: the session store, ingest, symbols, reconstruction, cursor.
ENGINE_SRCS += $(wildcard engine/*.c)
# engine/chunk.c compresses the session's event chunks
LIBS_PC += libzstd
