#pragma once
/// Power waveforms (uniform samples: the average power of each bin, so the samples integrate to
/// the exact energy) and the figures facility engineers and utilities ask of them: peak, minimum,
/// swing, ramp rates, and the fluctuation in the bands utilities care about, 0.1-2 Hz and 3-30 Hz
/// (MS/OpenAI/NVIDIA power-stabilisation slides, shared/reference/power-and-cooling.md §2.2).
///
/// Band RMS: the mean is removed, the signal zero-padded to a power of two and transformed by an
/// iterative radix-2 FFT; Parseval gives the mean square of the band:
///   rms_band^2 = 1/(N M) * Σ_{k in band, both signs} |X_k|^2     (N samples, M-point FFT)

#include <complex>
#include <span>
#include <string>
#include <vector>

namespace clustertwin::power {

struct WaveformStats {
  double mean_W = 0, peak_W = 0, min_W = 0;
  double swing_W = 0;                                         ///< peak - min
  double max_ramp_up_W_per_s = 0, max_ramp_down_W_per_s = 0;  ///< between adjacent samples
  double energy_J = 0;
  double band_0p1_2Hz_rms_W = 0, band_3_30Hz_rms_W = 0;
};

/// Figures of a waveform sampled every `dt_s` (bands skipped when `spectrum` is false).
WaveformStats waveform_stats(std::span<const double> w, double dt_s, bool spectrum = true);

/// In-place radix-2 FFT (size a power of two).
void fft(std::vector<std::complex<double>>& a);

/// RMS of the part of `w` (mean removed) between f_lo and f_hi Hz.
double band_rms(std::span<const double> w, double dt_s, double f_lo, double f_hi);
/// Several bands from one transform: RMS per (f_lo, f_hi).
std::vector<double> band_rms(std::span<const double> w, double dt_s,
                             std::span<const std::pair<double, double>> bands);

/// A named waveform for reports; `limit_W` > 0 draws a limit line.
struct Waveform {
  std::string name;
  double dt_s = 0;
  std::vector<double> power_W;
  double limit_W = 0;
  WaveformStats stats;
};

/// Bin averages down to at most `max_points` samples (energy kept); returns the new step.
std::vector<double> downsample(std::span<const double> w, double dt_s, size_t max_points,
                               double* new_dt_s);

}  // namespace clustertwin::power
