// Package slice finds the smallest affected slice of a multidimensional
// cube: the fewest, most general conjunctions of dimension=value (elements
// such as "job=build-7" or "image.digest=sha256:ab & node.pool=gpu") that
// explain an anomaly. Leaves are either Ratio leaves (bad events out of
// total events: failed requests, or pods with Bad 0/1 and Total 1), with
// or without an expected bad count from a baseline, or Volume leaves (an
// observed amount against its forecast, as in Squeeze). LoadCSV reads the
// public benchmark layouts (Squeeze/RiskLoc real+predict, RobustSpot
// failures+totals per minute).
//
// Score. Every element of up to MaxLayer dimensions (default 3) is scored
// by the log-likelihood ratio of "this slice is abnormal" against "nothing
// is wrong": a binomial test of its bad count against its expected count
// (Ratio with baseline), a scan statistic comparing its failure rate with
// the rate of everything outside it (Ratio without baseline, the unit
// case: no baseline is needed, the healthy units are the baseline), or a
// Poisson deviance of observed against forecast in the direction of the
// cube's overall deviation (Volume). The ratio is divided by the cube's
// dispersion, the median squared Pearson residual of its leaves over that
// of a perfect model (at least 1): real counts are noisier than binomial,
// and the median measures that noise while ignoring the few anomalous
// leaves. From it is subtracted the cost of naming the element, ln(number
// of elements in its layer) plus half a log of the number of leaves for
// the fitted rate (BIC); an element is a candidate only when the rest is
// positive. None of these numbers is tuned: they are the data's own
// noise, and description lengths.
//
// Search. The best candidate is taken, then generalized: a dimension is
// dropped while the leaves the coarser element adds (its siblings) are
// either hit like the element itself (their likelihood under the
// element's failure rate beats the one under their baseline: the ripple
// effect of a cause at the coarser level, as in RiskLoc and Squeeze) or
// abnormal on their own beyond the cost of naming an element, judged
// against the dispersion of the coarser layer once the element is
// explained. So "isp=A" is reported rather than "isp=A & province=X" when
// the other provinces of A are hit too, or when A has no other province,
// and the conjunction stays when its siblings are healthy. The chosen
// element's leaves are then removed and the search repeats on what is
// left, which handles several independent causes. Finally the list of
// causes, by evidence before cost and closed by the evidence of a
// just-significant element, is cut at its largest relative drop: a real
// cause dwarfs the best of what is left once it is explained, and the
// ones after the drop are the upper tail of the noise. Scattered noise
// failures therefore do not become causes. Absent values (empty strings)
// belong to no element, so they are never reported.
//
// Results are deterministic: ties are broken by layer, dimension order and
// value. Coverage is the share of all bad events (Ratio) or of the total
// deviation (Volume) inside a cause; Precision is its bad/total (Ratio) or
// the share of its absolute deviation going the anomaly's way (Volume).
package slice
