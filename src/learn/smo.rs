//! RBF-kernel SVM by sequential minimal optimisation.
