#pragma once
/// The energy stage of both power views (docs/models/power.md §energy): energy per token from a
/// workload's IT energy (its racks' share and its share of the fabric) over the tokens it
/// produced, at the facility x PUE; and, for a training run of a token budget, the run's time,
/// energy, cost and carbon.

namespace clustertwin::power {

/// Per token: the IT energy over the tokens and at the facility (x PUE); 0 and 0 without tokens.
struct TokenEnergy {
  double it_J = 0;
  double facility_J = 0;
};
TokenEnergy energy_per_token(double it_energy_J, double tokens, double pue);

/// A run of `token_budget` tokens at one step's figures.
struct RunEnergyInput {
  double token_budget = 0;
  double tokens_per_step = 0;
  double step_time_s = 0;
  double facility_energy_per_step_J = 0;  ///< the job's IT share x PUE
  double price_per_kWh = 0;
  double grid_gCO2_per_kWh = 0;
  double gpus = 0;       ///< of the job
  double gpu_tgp_W = 0;  ///< for the GPU-hours x TGP figure (how Meta and BLOOM report)
};
struct RunEnergy {
  double steps = 0, time_s = 0, energy_J = 0, cost = 0, carbon_kg = 0, tdp_energy_J = 0;
};
/// Zero when no budget or no tokens per step.
RunEnergy run_energy(const RunEnergyInput& in);

}  // namespace clustertwin::power
