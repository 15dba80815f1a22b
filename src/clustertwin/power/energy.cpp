// The energy stage of the power views (energy.h).

#include "clustertwin/power/energy.h"

namespace clustertwin::power {

TokenEnergy energy_per_token(double it_energy_J, double tokens, double pue) {
  TokenEnergy e;
  if (tokens > 0) {
    e.it_J = it_energy_J / tokens;
    e.facility_J = e.it_J * pue;
  }
  return e;
}

RunEnergy run_energy(const RunEnergyInput& in) {
  RunEnergy r;
  if (!(in.token_budget > 0) || !(in.tokens_per_step > 0)) return r;
  r.steps = in.token_budget / in.tokens_per_step;
  r.time_s = r.steps * in.step_time_s;
  r.energy_J = r.steps * in.facility_energy_per_step_J;
  // kWh = J / 3.6e6; carbon in kg = kWh x gCO2/kWh / 1000.
  r.cost = r.energy_J / 3.6e6 * in.price_per_kWh;
  r.carbon_kg = r.energy_J / 3.6e6 * in.grid_gCO2_per_kWh / 1e3;
  r.tdp_energy_J = in.gpus * in.gpu_tgp_W * r.time_s;
  return r;
}

}  // namespace clustertwin::power
