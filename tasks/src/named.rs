//! [`named_enum!`]: one definition for the vocabulary's simple enums and their stable
//! names.
//!
//! Every enum whose values are stored, printed or typed on a command line by name
//! (verdicts, conditions, stop reasons, layers, stages, ...) is declared through the macro,
//! which writes `name()`, `ALL` (every value, in declaration order), `Display` (the name)
//! and `FromStr` (the name back, or an error listing the valid names) from one list of
//! `Variant = "name"` pairs. A new value is then known everywhere at once: nothing keeps
//! a second string copy of the vocabulary that could drift from it.

/// Declares a fieldless enum with a stable name per value.
///
/// ```
/// faultline_tasks::named_enum! {
///     /// How loud.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Volume: "volume" {
///         /// Barely.
///         Quiet = "quiet",
///         Loud = "loud",
///     }
/// }
/// assert_eq!(Volume::ALL, [Volume::Quiet, Volume::Loud]);
/// assert_eq!(Volume::Loud.name(), "loud");
/// assert_eq!(Volume::Quiet.to_string(), "quiet");
/// assert_eq!("loud".parse::<Volume>(), Ok(Volume::Loud));
/// assert_eq!(
///     "mute".parse::<Volume>().unwrap_err(),
///     "unknown volume `mute` (expected one of: quiet, loud)"
/// );
/// ```
///
/// The string after the enum's name is what the `FromStr` error calls a value. The enum's
/// own attributes (derives, serde renames, docs) are kept as written; the macro adds no
/// derive of its own.
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The stable name (stored, printed and parsed).
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(format!(
                        concat!("unknown ", $what, " `{}` (expected one of: {})"),
                        s,
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}
