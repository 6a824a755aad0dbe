"""Operations: the record of every long-running action hypd takes."""
