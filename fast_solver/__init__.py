"""Fast LMNN solvers (Appendix A of Weinberger & Saul, JMLR 2009) and their peers."""
