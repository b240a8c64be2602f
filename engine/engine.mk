# engine/: the session store, ingest, symbols, reconstruction, cursor.
ENGINE_SRCS += $(wildcard engine/*.c)
