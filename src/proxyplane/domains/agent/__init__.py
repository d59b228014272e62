"""Operations agents need to orient themselves (also on REST): who am I, from which IP."""
