//! Random loss at a link: none, Bernoulli, or the two-state Gilbert-Elliott model. Each link
//! owns its own seeded generator, so adding a link never changes another link's losses.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Which random loss a link applies to arriving packets.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum LossConfig {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability per packet.
        p: f64,
    },
    /// Gilbert-Elliott: a good and a bad state with their own loss probabilities; the state
    /// changes before each packet with the given transition probabilities.
    GilbertElliott {
        /// Probability of moving from good to bad, per packet.
        p_good_bad: f64,
        /// Probability of moving from bad to good, per packet.
        p_bad_good: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossConfig {
    /// Long-run loss probability of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossConfig::None => 0.0,
            LossConfig::Bernoulli { p } => p,
            LossConfig::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let total = p_good_bad + p_bad_good;
                if total <= 0.0 {
                    return loss_good;
                }
                let bad = p_good_bad / total;
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }
}

/// A link's loss process: model, state and generator.
#[derive(Clone, Debug)]
pub struct LossProcess {
    config: LossConfig,
    bad: bool,
    rng: ChaCha8Rng,
}

impl LossProcess {
    /// A process for `config` drawing from `rng`.
    pub fn new(config: LossConfig, rng: ChaCha8Rng) -> Self {
        LossProcess {
            config,
            bad: false,
            rng,
        }
    }

    /// Whether the next packet is lost.
    pub fn drop_next(&mut self) -> bool {
        match self.config {
            LossConfig::None => false,
            LossConfig::Bernoulli { p } => self.rng.gen::<f64>() < p,
            LossConfig::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { p_bad_good } else { p_good_bad };
                if self.rng.gen::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                self.rng.gen::<f64>() < p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rate(config: LossConfig) -> f64 {
        let mut p = LossProcess::new(config, ChaCha8Rng::seed_from_u64(7));
        let n = 200_000;
        (0..n).filter(|_| p.drop_next()).count() as f64 / n as f64
    }

    #[test]
    fn long_run_rates_match_the_models() {
        let b = LossConfig::Bernoulli { p: 0.01 };
        assert!((rate(b) - 0.01).abs() < 0.001);
        let ge = LossConfig::GilbertElliott {
            p_good_bad: 0.01,
            p_bad_good: 0.1,
            loss_good: 0.0,
            loss_bad: 0.5,
        };
        assert!((rate(ge) - ge.mean_loss()).abs() < 0.005);
    }
}
