//! Known limits of the toolchains the drift build meets: compile errors that say "this compiler
//! or this ROCm is too old for the code", not "the code changed under the backend".
//!
//! An error new at the candidate that one of these matches is new upstream code meeting the
//! machine's toolchain (a "toolchain, new instance"), not drift: the fix is a newer toolchain,
//! not a change to the overlay. The table is data: one row a limit, its name as the report shows
//! it, and the message pattern (after [`super::differential::normalize_message`]).

use std::sync::LazyLock;

use regex::Regex;

/// One limit: what the report calls it, and the messages it explains.
pub struct Limit {
    pub name: &'static str,
    pub pattern: &'static str,
}

/// The limits, checked in order.
pub const LIMITS: &[Limit] = &[
    Limit {
        name: "clang 15: a lambda cannot capture a structured binding (C++20, clang 16)",
        pattern: r"^(reference to local binding '[^']*' declared in enclosing (function|lambda expression)|'[^']*' in capture list does not name a variable|capture of binding '[^']*' in lambda)",
    },
    Limit {
        name: "ROCm 5.2: no FP8 or bfloat16 HIP types (hip_fp8.h, hip_bf16.h)",
        pattern: r"^(unknown type name|use of undeclared identifier) '(__hip_fp8_[a-z0-9_]*|__hip_bfloat16[0-9]*|__hip_fp8x[0-9a-z_]*|hip_bfloat16)'",
    },
    Limit {
        name: "ROCm 5.2: no bfloat16, FP8 or integer data types in hipDataType",
        pattern: r"^use of undeclared identifier '(HIP_R_16BF|HIP_R_8F_[A-Z0-9_]*|HIP_R_8I|HIP_R_32I|HIP_R_8U|HIP_R_32U)'",
    },
    Limit {
        name: "ROCm 5.2: device and pointer attributes of newer HIP",
        pattern: r"^no member named '(uuid|type)' in '(hipDeviceProp_t|hipPointerAttribute_t|struct hipDeviceProp_t|struct hipPointerAttribute_t)'",
    },
];

/// The limit whose pattern matches `message`, if one does.
pub fn limit_of(message: &str) -> Option<&'static Limit> {
    static PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        (LIMITS.iter())
            .map(|limit| Regex::new(limit.pattern).expect("a valid pattern"))
            .collect()
    });
    let index = PATTERNS.iter().position(|p| p.is_match(message))?;
    Some(&LIMITS[index])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_name_clang_15_and_rocm_5_2_messages_and_nothing_else() {
        let binding = limit_of(
            "reference to local binding 'out_shape' declared in enclosing function 'mlx::core::f'",
        );
        assert!(binding.unwrap().name.starts_with("clang 15"));
        assert!(limit_of("'b' in capture list does not name a variable").is_some());
        assert!(limit_of("unknown type name '__hip_fp8_e4m3'")
            .unwrap()
            .name
            .contains("FP8"));
        assert!(limit_of("use of undeclared identifier 'HIP_R_16BF'").is_some());
        assert!(limit_of("no member named 'uuid' in 'hipDeviceProp_t'").is_some());
        for drift in [
            "use of undeclared identifier 'output_input_aliases_'",
            "no member named 'error' in 'mlx::core::Event'",
            "unknown type name 'GatherQQMM'",
            "out-of-line definition of 'use_fallback' does not match any declaration",
        ] {
            assert!(limit_of(drift).is_none(), "{drift}");
        }
    }
}
