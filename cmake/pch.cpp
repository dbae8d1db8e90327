// Translation unit that carries the precompiled header.
