//! Tests of the rules on small C++ snippets: one per break kind, one per change that must stay
//! quiet.

use super::{analyze, ApiConfig, ApiReport, Kind};
use crate::doc::Described;
use crate::FileMap;

fn files(entries: &[(&str, &str)]) -> FileMap {
    entries
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec().into()))
        .collect()
}

fn run(from: &[(&str, &str)], to: &[(&str, &str)], backend: &[(&str, &str)]) -> ApiReport {
    analyze(
        &files(from),
        &files(to),
        &files(backend),
        &ApiConfig::default(),
    )
}

/// `(kind, symbol)` of every finding.
fn found(report: &ApiReport) -> Vec<(Kind, String)> {
    report
        .findings
        .iter()
        .map(|f| (f.kind, f.symbol.clone()))
        .collect()
}

fn one(kind: Kind, symbol: &str) -> Vec<(Kind, String)> {
    vec![(kind, symbol.to_string())]
}

const ARRAY_H: &str = "#pragma once
namespace mlx::core {
using Shape = std::vector<int>;
class MLX_API array {
 public:
  const Shape& shape() const { return shape_; }
  void set_data(allocator::Buffer buf);
 private:
  Shape shape_;
};
}
";

#[test]
fn a_changed_return_tuple_is_a_changed_signature() {
    let from = "namespace mlx::core {\nstd::pair<Shape, Strides> collapse_contiguous_dims(\n    const Shape& shape,\n    const std::vector<Strides>& strides);\n}\n";
    let to = from.replace(
        "std::pair<Shape, Strides>",
        "std::tuple<Shape, Strides, int64_t>",
    );
    let backend = "#include \"mlx/backend/common/utils.h\"\nnamespace mlx::core::rocm {\nvoid copy(const array& in) {\n  auto [shape, strides] = collapse_contiguous_dims(in.shape(), {in.strides()});\n}\n}\n";
    let report = run(
        &[("mlx/backend/common/utils.h", from)],
        &[("mlx/backend/common/utils.h", &to)],
        &[("mlx/backend/rocm/copy.cpp", backend)],
    );
    assert_eq!(
        found(&report),
        one(
            Kind::ChangedSignature,
            "mlx::core::collapse_contiguous_dims"
        )
    );
    let finding = &report.findings[0];
    assert_eq!(
        finding.backend.as_ref().map(|l| (l.path.as_str(), l.line)),
        Some(("mlx/backend/rocm/copy.cpp", 4))
    );
    assert_eq!(finding.to.as_ref().map(|l| l.line), Some(2));
    assert!(
        finding
            .message
            .contains("std::tuple<Shape,Strides,int64_t>"),
        "{}",
        finding.message
    );
    assert!(
        finding
            .message
            .contains("binding 2 name(s) (the new result: 3 element(s))"),
        "{}",
        finding.message
    );
}

/// `compiled_collapse_contiguous_dims` went from three values to four (upstream's #3720);
/// `statement` is the backend's call of it.
fn report_for_compiled_collapse(statement: &str) -> ApiReport {
    let from = "namespace mlx::core {
std::tuple<bool, Shape, std::vector<Strides>> compiled_collapse_contiguous_dims(
    const std::vector<array>& inputs,
    const array& out);
}
";
    let to = "namespace mlx::core {
std::tuple<bool, bool, Shape, std::vector<Strides>>
compiled_collapse_contiguous_dims(
    const std::vector<array>& inputs,
    const array& out);
}
";
    let backend = format!("#include \"mlx/backend/common/compiled.h\"\nnamespace mlx::core {{\nvoid Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {{\n  {statement}\n}}\n}}\n");
    run(
        &[("mlx/backend/common/compiled.h", from)],
        &[("mlx/backend/common/compiled.h", to)],
        &[("mlx/backend/rocm/compiled.cpp", &backend)],
    )
}

#[test]
fn a_structured_binding_of_the_new_tuple_is_not_reported() {
    let binds_four = [
        "auto [contiguous, negative, shape, strides] =\n      compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "const auto& [contiguous, negative, shape, strides] = compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "auto [contiguous, negative, shape, strides]{compiled_collapse_contiguous_dims(inputs, outputs[0])};",
    ];
    for statement in binds_four {
        let report = report_for_compiled_collapse(statement);
        assert_eq!(found(&report), vec![], "{statement}");
    }
}

#[test]
fn a_structured_binding_of_the_old_count_is_reported() {
    let report = report_for_compiled_collapse(
        "auto [contiguous, shape, strides] = compiled_collapse_contiguous_dims(inputs, outputs[0]);",
    );
    assert_eq!(
        found(&report),
        one(
            Kind::ChangedSignature,
            "mlx::core::compiled_collapse_contiguous_dims"
        )
    );
    assert!(
        report.findings[0]
            .message
            .contains("binding 3 name(s) (the new result: 4 element(s))"),
        "{}",
        report.findings[0].message
    );
}

#[test]
fn a_deduced_or_discarded_result_is_not_reported_by_itself() {
    let quiet = [
        "auto r = compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "const auto& r = compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "(void)compiled_collapse_contiguous_dims(inputs, outputs[0]);",
    ];
    for statement in quiet {
        let report = report_for_compiled_collapse(statement);
        assert_eq!(found(&report), vec![], "{statement}");
    }
}

#[test]
fn a_result_used_as_its_old_type_is_reported() {
    let broken = [
        "std::tuple<bool, Shape, std::vector<Strides>> r = compiled_collapse_contiguous_dims(inputs, outputs[0]);",
        "use(compiled_collapse_contiguous_dims(inputs, outputs[0]));",
        "bool c = std::get<0>(compiled_collapse_contiguous_dims(inputs, outputs[0]));",
        "auto [a, b] = std::pair{compiled_collapse_contiguous_dims(inputs, outputs[0]), 1};",
    ];
    for statement in broken {
        let report = report_for_compiled_collapse(statement);
        assert_eq!(
            found(&report),
            one(
                Kind::ChangedSignature,
                "mlx::core::compiled_collapse_contiguous_dims"
            ),
            "{statement}"
        );
    }
}

#[test]
fn a_structured_binding_of_a_result_no_longer_a_tuple_is_reported() {
    let from = "namespace mlx::core {
std::pair<Shape, Strides> split(const array& a);
}
";
    let to = from.replace("std::pair<Shape, Strides>", "Layout");
    let backend = "#include \"mlx/backend/common/utils.h\"\nnamespace mlx::core::rocm {\nvoid f(const array& a) {\n  auto [shape, strides] = split(a);\n  auto layout = split(a);\n}\n}\n";
    let report = run(
        &[("mlx/backend/common/utils.h", from)],
        &[("mlx/backend/common/utils.h", &to)],
        &[("mlx/backend/rocm/f.cpp", backend)],
    );
    assert_eq!(
        found(&report),
        one(Kind::ChangedSignature, "mlx::core::split")
    );
    let finding = &report.findings[0];
    assert_eq!(finding.backend.as_ref().map(|l| l.line), Some(4));
    assert!(
        finding.message.contains("not a tuple or pair"),
        "{}",
        finding.message
    );
}

#[test]
fn a_constructor_gaining_an_argument_is_reported_for_each_spelling() {
    let from = "namespace mlx::core::allocator {\nclass Buffer {\n public:\n  explicit Buffer(void* ptr);\n  void* raw_ptr();\n private:\n  void* ptr_;\n};\n}\n";
    let to = from.replace("Buffer(void* ptr);", "Buffer(void* ptr, size_t size);");
    let spellings = [
        "allocator::Buffer buf(ptr);",
        "auto buf = allocator::Buffer(ptr);",
        "auto* buf = new allocator::Buffer(ptr);",
        "auto buf = std::make_shared<allocator::Buffer>(ptr);",
    ];
    for spelling in spellings {
        let backend = format!("#include \"mlx/allocator.h\"\nnamespace mlx::core::rocm {{\nvoid make(void* ptr) {{\n  {spelling}\n}}\n}}\n");
        let report = run(
            &[("mlx/allocator.h", from)],
            &[("mlx/allocator.h", &to)],
            &[("mlx/backend/rocm/allocator.cpp", &backend)],
        );
        assert_eq!(
            found(&report),
            one(
                Kind::ConstructorChanged,
                "mlx::core::allocator::Buffer::Buffer"
            ),
            "{spelling}"
        );
    }
}

#[test]
fn a_constructor_gaining_a_defaulted_argument_is_not_reported() {
    let from =
        "namespace mlx::core::allocator {\nclass Buffer {\n public:\n  Buffer(void* ptr);\n};\n}\n";
    let to = from.replace("Buffer(void* ptr);", "Buffer(void* ptr, size_t size = 0);");
    let backend = "#include \"mlx/allocator.h\"\nnamespace mlx::core { void f(void* p) { allocator::Buffer b(p); } }\n";
    let report = run(
        &[("mlx/allocator.h", from)],
        &[("mlx/allocator.h", &to)],
        &[("mlx/backend/rocm/a.cpp", backend)],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn a_member_gaining_a_parameter_is_a_changed_signature() {
    let to = ARRAY_H.replace(
        "void set_data(allocator::Buffer buf);",
        "void set_data(allocator::Buffer buf, Deleter d);",
    );
    let backend = "#include \"mlx/array.h\"\nnamespace mlx::core::rocm {\nvoid fill(array& out, allocator::Buffer buf) {\n  out.set_data(buf);\n}\n}\n";
    let report = run(
        &[("mlx/array.h", ARRAY_H)],
        &[("mlx/array.h", &to)],
        &[("mlx/backend/rocm/fill.cpp", backend)],
    );
    assert_eq!(
        found(&report),
        one(Kind::ChangedSignature, "mlx::core::array::set_data")
    );
}

const PRIMITIVES_H: &str = "namespace mlx::core {
class MLX_API Primitive {
 public:
  virtual void eval_cpu(const std::vector<array>& inputs, array& out) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, array& out) = 0;
};
class Add : public Primitive {
 public:
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;
  DEFINE_VMAP()
  DEFINE_NAME(Add)
};
class Exp : public Primitive {
 public:
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;
};
}
";

const GATHER_QMM: &str = "class GatherQMM : public Primitive {
 public:
  explicit GatherQMM(Stream stream, int group_size);
  void eval_cpu(const std::vector<array>& inputs, array& out) override;
  void eval_gpu(const std::vector<array>& inputs, array& out) override;
};
}
";

fn primitives_with_gather_qmm() -> String {
    let end = PRIMITIVES_H.rfind('}').unwrap();
    format!("{}{GATHER_QMM}", &PRIMITIVES_H[..end])
}

const ROCM_PRIMITIVES: &str = "#include \"mlx/primitives.h\"
namespace mlx::core {
#define NO_GPU(func) void func::eval_gpu(const std::vector<array>& inputs, array& out) { throw 1; }
void Add::eval_gpu(const std::vector<array>& inputs, array& out) {}
NO_GPU(Exp)
}
";

#[test]
fn a_new_primitive_without_eval_gpu_is_reported() {
    let to = primitives_with_gather_qmm();
    let report = run(
        &[("mlx/primitives.h", PRIMITIVES_H)],
        &[("mlx/primitives.h", &to)],
        &[("mlx/backend/rocm/primitives.cpp", ROCM_PRIMITIVES)],
    );
    assert_eq!(
        found(&report),
        one(Kind::MissingEvalGpu, "mlx::core::GatherQMM::eval_gpu")
    );
    assert_eq!(report.findings[0].to.as_ref().map(|l| l.line), Some(23));
    // The backend place is its stub list, where `NO_GPU(GatherQMM)` would go.
    let backend = report.findings[0]
        .backend
        .as_ref()
        .map(|l| (l.path.as_str(), l.line));
    assert_eq!(backend, Some(("mlx/backend/rocm/primitives.cpp", 5)));
}

#[test]
fn a_new_primitive_with_a_stub_or_a_shared_definition_is_not_reported() {
    let to = primitives_with_gather_qmm();
    let stubbed = ROCM_PRIMITIVES.replace("NO_GPU(Exp)", "NO_GPU(Exp)\nNO_GPU(GatherQMM)");
    let report = run(
        &[("mlx/primitives.h", PRIMITIVES_H)],
        &[("mlx/primitives.h", &to)],
        &[("mlx/backend/rocm/primitives.cpp", &stubbed)],
    );
    assert_eq!(found(&report), vec![]);

    let shared = "namespace mlx::core {\nvoid GatherQMM::eval_gpu(const std::vector<array>& inputs, array& out) {}\n}\n";
    let report = run(
        &[("mlx/primitives.h", PRIMITIVES_H)],
        &[
            ("mlx/primitives.h", &to),
            ("mlx/backend/gpu/primitives.cpp", shared),
        ],
        &[("mlx/backend/rocm/primitives.cpp", ROCM_PRIMITIVES)],
    );
    assert_eq!(found(&report), vec![]);
}

const EVENT_H: &str = "namespace mlx::core {
class Event {
 public:
  Event() = default;
  explicit Event(Stream stream);
  void wait();
  void signal(Stream stream);
  bool valid() const { return event_ != nullptr; }
 private:
  void* event_;
};
}
";

const ROCM_EVENT: &str = "#include \"mlx/event.h\"
namespace mlx::core {
Event::Event(Stream s) {}
void Event::wait() {}
void Event::signal(Stream s) {}
}
";

fn event_with_is_signaled() -> String {
    EVENT_H.replace(
        "  void wait();\n",
        "  void wait();\n  bool is_signaled() const;\n",
    )
}

#[test]
fn a_new_member_other_backends_define_is_reported() {
    let cuda = format!(
        "{}bool Event::is_signaled() const {{ return true; }}\n}}\n",
        ROCM_EVENT.trim_end().trim_end_matches('}')
    );
    let to = event_with_is_signaled();
    let report = run(
        &[("mlx/event.h", EVENT_H)],
        &[("mlx/event.h", &to), ("mlx/backend/cuda/event.cu", &cuda)],
        &[("mlx/backend/rocm/event.cpp", ROCM_EVENT)],
    );
    assert_eq!(
        found(&report),
        one(
            Kind::MissingBackendDefinition,
            "mlx::core::Event::is_signaled"
        )
    );
    assert!(
        report.findings[0]
            .message
            .contains("mlx/backend/cuda/event.cu:6"),
        "{}",
        report.findings[0].message
    );
}

#[test]
fn a_new_member_no_backend_defines_is_not_reported() {
    // Core code (not another backend) defines it: nothing for the backend to do.
    let to = event_with_is_signaled();
    let report = run(
        &[("mlx/event.h", EVENT_H)],
        &[("mlx/event.h", &to)],
        &[("mlx/backend/rocm/event.cpp", ROCM_EVENT)],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn a_changed_member_the_backend_defines_is_a_changed_signature() {
    let to = EVENT_H.replace(
        "void signal(Stream stream);",
        "void signal(Stream stream, uint64_t value);",
    );
    let report = run(
        &[("mlx/event.h", EVENT_H)],
        &[("mlx/event.h", &to)],
        &[("mlx/backend/rocm/event.cpp", ROCM_EVENT)],
    );
    assert_eq!(
        found(&report),
        one(Kind::ChangedSignature, "mlx::core::Event::signal")
    );
}

const UTILS_H: &str = "#pragma once\nnamespace mlx::core {\nint64_t elem_to_loc(int64_t elem, const Shape& shape);\n}\n";
const CEIL_DIV: &str =
    "template <typename T>\nT ceil_div(T a, T b) {\n  return (a + b - 1) / b;\n}\n";
const HIP_COMPAT: &str = "#pragma once\n__host__ __device__ inline int ceil_div(int a, int b) {\n  return (a + b - 1) / b;\n}\n";
const KERNELS: &str = "#include \"mlx/utils.h\"\n#include \"mlx/backend/rocm/device/utils.hpp\"\nnamespace mlx::core::rocm {\nint blocks(int n) {\n  return ceil_div(n, 256u);\n}\n}\n";

fn utils_with_ceil_div() -> String {
    UTILS_H.replace("\n}\n", &format!("\n{CEIL_DIV}}}\n"))
}

#[test]
fn a_new_template_hiding_a_global_helper_is_reported() {
    let to = utils_with_ceil_div();
    let report = run(
        &[("mlx/utils.h", UTILS_H)],
        &[("mlx/utils.h", &to)],
        &[
            ("mlx/backend/rocm/device/utils.hpp", HIP_COMPAT),
            ("mlx/backend/rocm/kernels.hip", KERNELS),
        ],
    );
    assert_eq!(
        found(&report),
        one(Kind::HiddenByNewDeclaration, "mlx::core::ceil_div")
    );
    let finding = &report.findings[0];
    assert_eq!(
        finding.backend.as_ref().map(|l| (l.path.as_str(), l.line)),
        Some(("mlx/backend/rocm/kernels.hip", 5))
    );
    assert!(finding.message.contains("template"), "{}", finding.message);
}

#[test]
fn a_helper_in_the_callers_own_namespace_is_not_hidden() {
    let to = utils_with_ceil_div();
    let own = format!(
        "#pragma once\nnamespace mlx::core::rocm {{\n{}}}\n",
        HIP_COMPAT.trim_start_matches("#pragma once\n")
    );
    let report = run(
        &[("mlx/utils.h", UTILS_H)],
        &[("mlx/utils.h", &to)],
        &[
            ("mlx/backend/rocm/device/utils.hpp", &own),
            ("mlx/backend/rocm/kernels.hip", KERNELS),
        ],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn a_removed_function_or_class_the_backend_uses_is_reported() {
    let from = "namespace mlx::core {\nclass Scheduler { public: void run(); };\nvoid synchronize(Stream s);\nvoid unused_here();\n}\n";
    let to = "namespace mlx::core {\n}\n";
    let backend = "#include \"mlx/scheduler.h\"\nnamespace mlx::core::rocm {\nvoid f(Stream s, Scheduler* sched) {\n  synchronize(s);\n}\n}\n";
    let report = run(
        &[("mlx/scheduler.h", from)],
        &[("mlx/scheduler.h", to)],
        &[("mlx/backend/rocm/f.cpp", backend)],
    );
    assert_eq!(
        found(&report),
        vec![
            (Kind::RemovedDeclaration, "mlx::core::Scheduler".to_string()),
            (
                Kind::RemovedDeclaration,
                "mlx::core::synchronize".to_string()
            ),
        ]
    );
}

#[test]
fn source_compatible_changes_are_not_reported() {
    let from = "namespace mlx::core {
enum class Kind { Float, Int };
void reshape_in_place(array& a, const Shape& shape);
MLX_API array add(const array& a, const array& b);
}
";
    let to = "namespace mlx::core {
enum class Kind { Float, Int, Complex };
void reshape_in_place(array& a, Shape shape);
MLX_API array add(const array& a, const array& b, StreamOrDevice s = {});
}
";
    let backend = "#include \"mlx/ops.h\"
namespace mlx::core::rocm {
void f(array& a, const Shape& s, Kind k) {
  switch (k) { case Kind::Float: break; case Kind::Int: break; }
  reshape_in_place(a, s);
  auto c = add(a, a);
}
}
";
    let report = run(
        &[("mlx/ops.h", from)],
        &[("mlx/ops.h", to)],
        &[("mlx/backend/rocm/f.cpp", backend)],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn an_overloaded_call_stays_quiet_while_one_overload_still_fits() {
    let from = "namespace mlx::core {\narray slice(const array& a, Shape start);\narray slice(const array& a, const array& start);\n}\n";
    let to = "namespace mlx::core {\narray slice(const array& a, Shape start);\narray slice(const array& a, const array& start, int axis);\n}\n";
    let backend = "#include \"mlx/ops.h\"\nnamespace mlx::core::rocm { void f(const array& a, Shape s) { slice(a, s); } }\n";
    let report = run(
        &[("mlx/ops.h", from)],
        &[("mlx/ops.h", to)],
        &[("mlx/backend/rocm/f.cpp", backend)],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn headers_the_backend_does_not_include_are_not_its_api() {
    let from = "namespace mlx::core {\nvoid helper(int a);\n}\n";
    let to = "namespace mlx::core {\nvoid helper(int a, int b);\n}\n";
    let backend =
        "#include \"mlx/array.h\"\nnamespace mlx::core::rocm { void f() { helper(1); } }\n";
    let report = run(
        &[("mlx/array.h", ARRAY_H), ("mlx/other.h", from)],
        &[("mlx/array.h", ARRAY_H), ("mlx/other.h", to)],
        &[("mlx/backend/rocm/f.cpp", backend)],
    );
    assert_eq!(found(&report), vec![]);
}

#[test]
fn blanked_macros_leave_no_parse_errors() {
    let report = run(
        &[("mlx/primitives.h", PRIMITIVES_H)],
        &[("mlx/primitives.h", PRIMITIVES_H)],
        &[("mlx/backend/rocm/primitives.cpp", ROCM_PRIMITIVES)],
    );
    assert_eq!(
        (report.parse.from_error_nodes, report.parse.to_error_nodes),
        (0, 0)
    );
    assert_eq!(report.parse.backend_files, 1);
}

#[test]
fn deeply_nested_backend_code_is_read_without_overflowing_the_stack() {
    let depth = 20_000;
    let nested = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    let chain = vec!["n"; depth].join(" + ");
    let backend = format!(
        "#include \"mlx/array.h\"\nnamespace mlx::core::rocm {{\nint f(int n) {{ return {nested} + {chain}; }}\nvoid g(array& out, allocator::Buffer b) {{ out.set_data(b); }}\n}}\n"
    );
    let to = ARRAY_H.replace(
        "void set_data(allocator::Buffer buf);",
        "void set_data(allocator::Buffer buf, Deleter d);",
    );
    let report = run(
        &[("mlx/array.h", ARRAY_H)],
        &[("mlx/array.h", &to)],
        &[("mlx/backend/rocm/deep.cpp", &backend)],
    );
    assert_eq!(
        found(&report),
        one(Kind::ChangedSignature, "mlx::core::array::set_data")
    );
}

#[test]
fn non_utf8_and_binary_files_are_survived() {
    let backend: &[(&str, &str)] = &[(
        "mlx/backend/rocm/ok.cpp",
        "namespace mlx::core { void f(); }\n",
    )];
    let mut backend = files(backend);
    backend.insert(
        "mlx/backend/rocm/bad.cpp".to_string(),
        vec![0xff, 0xfe, 0x00, b'{', 0x80, b'\n'].into(),
    );
    let from = files(&[("mlx/array.h", ARRAY_H)]);
    let report = analyze(&from, &from, &backend, &ApiConfig::default());
    assert_eq!(found(&report), vec![]);
    assert_eq!(report.parse.backend_files, 2);
}

#[test]
fn a_removed_member_the_backend_defines_or_an_enumerator_it_names_is_reported() {
    let to = EVENT_H.replace("  void signal(Stream stream);\n", "");
    let report = run(
        &[("mlx/event.h", EVENT_H)],
        &[("mlx/event.h", &to)],
        &[("mlx/backend/rocm/event.cpp", ROCM_EVENT)],
    );
    assert_eq!(
        found(&report),
        one(Kind::RemovedDeclaration, "mlx::core::Event::signal")
    );

    let from = "namespace mlx::core {\nenum class Reduce { Sum, Prod, Max };\n}\n";
    let to = "namespace mlx::core {\nenum class Reduce { Sum, Max };\n}\n";
    let backend = "#include \"mlx/reduce.h\"\nnamespace mlx::core::rocm {\nint f(Reduce r) {\n  switch (r) { case Reduce::Prod: return 1; default: return 0; }\n}\n}\n";
    let report = run(
        &[("mlx/reduce.h", from)],
        &[("mlx/reduce.h", to)],
        &[("mlx/backend/rocm/reduce.cpp", backend)],
    );
    assert_eq!(
        found(&report),
        one(Kind::RemovedDeclaration, "mlx::core::Reduce::Prod")
    );
    assert_eq!(report.findings[0].backend.as_ref().map(|l| l.line), Some(4));
}

#[test]
fn the_report_renders_each_place_and_the_count() {
    let to = ARRAY_H.replace(
        "void set_data(allocator::Buffer buf);",
        "void set_data(allocator::Buffer buf, Deleter d);",
    );
    let backend = "#include \"mlx/array.h\"\nnamespace mlx::core::rocm {\nvoid fill(array& out, allocator::Buffer buf) {\n  out.set_data(buf);\n}\n}\n";
    let report = run(
        &[("mlx/array.h", ARRAY_H)],
        &[("mlx/array.h", &to)],
        &[("mlx/backend/rocm/fill.cpp", backend)],
    );
    let text = report.doc(&Default::default()).text();
    assert!(
        text.contains("\n  changed-signature mlx::core::array::set_data: "),
        "{text}"
    );
    assert!(
        text.contains("; backend mlx/backend/rocm/fill.cpp:4\n"),
        "{text}"
    );
    assert!(
        text.contains("where: upstream mlx/array.h:7 → mlx/array.h:7; "),
        "{text}"
    );
    assert!(text.contains("1 break, 0 suppressed"), "{text}");
}

#[test]
fn a_function_of_a_namespace_the_call_is_not_in_is_not_its_target() {
    let from = "namespace mlx::core::fast {\narray rope(const array& x, int dims);\n}\n";
    let to =
        "namespace mlx::core::fast {\narray rope(const array& x, int dims, bool traditional);\n}\n";
    // `rope` here is the backend's own kernel helper, reached from `mlx::core::rocm`.
    let backend = "#include \"mlx/fast.h\"\nnamespace mlx::core::rocm {\nvoid run(const array& x) { rope(x, 64); }\n}\n";
    let report = run(
        &[("mlx/fast.h", from)],
        &[("mlx/fast.h", to)],
        &[("mlx/backend/rocm/rope.cpp", backend)],
    );
    assert_eq!(found(&report), vec![]);
    let qualified = backend.replace("rope(x, 64)", "fast::rope(x, 64)");
    let report = run(
        &[("mlx/fast.h", from)],
        &[("mlx/fast.h", to)],
        &[("mlx/backend/rocm/rope.cpp", &qualified)],
    );
    assert_eq!(
        found(&report),
        one(Kind::ChangedSignature, "mlx::core::fast::rope")
    );
}

/// Each shape nested 50,000 deep in a backend file, with a use of a changed member inside or
/// after it. Before, the namespaces were copied a level (the run was killed for its memory), and
/// every template name asked tree-sitter for its parent (5 minutes) and every call looked for
/// macro arguments (25 seconds).
#[test]
fn namespaces_templates_and_calls_nested_50_000_deep_are_read() {
    let depth = 50_000;
    let use_it = "void g(array& out, allocator::Buffer b) { out.set_data(b); }\n";
    let namespaces = format!(
        "{}{use_it}{}\n",
        "namespace a { ".repeat(depth),
        "}".repeat(depth)
    );
    let templates = format!("{}int x;\n{use_it}", "template <class T> ".repeat(depth));
    let calls = format!(
        "int v = {}0{};\n{use_it}",
        "f(".repeat(depth),
        ")".repeat(depth)
    );
    let to = ARRAY_H.replace(
        "void set_data(allocator::Buffer buf);",
        "void set_data(allocator::Buffer buf, Deleter d);",
    );
    for (name, backend) in [
        ("namespaces", namespaces),
        ("templates", templates),
        ("calls", calls),
    ] {
        let backend = format!("#include \"mlx/array.h\"\nnamespace mlx::core {{\n{backend}}}\n");
        let report = run(
            &[("mlx/array.h", ARRAY_H)],
            &[("mlx/array.h", &to)],
            &[("mlx/backend/rocm/deep.cpp", &backend)],
        );
        assert_eq!(
            found(&report),
            one(Kind::ChangedSignature, "mlx::core::array::set_data"),
            "{name}"
        );
    }
}

/// An analysis at a new pin parses only what changed there: with a parse store, the second
/// pin (one header changed) parses that header alone, and the third (a header now defining a
/// macro one backend file spells) that header and that file; each report is the one an analysis
/// with no store makes.
#[test]
fn a_new_pin_parses_only_the_files_that_changed() {
    use super::{analyze_kept, Parses};
    use forkbook_records::cache_entry::{Secret, Store};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "drift parse", Some(Secret::from_bytes([3; 32])));
    let cuda = format!(
        "{}bool Event::is_signaled() const {{ return true; }}\n}}\n",
        ROCM_EVENT.trim_end().trim_end_matches('}')
    );
    let copy = "#include \"mlx/array.h\"\nnamespace mlx::core::rocm {\nDISPATCH_ALL(float);\nvoid g(array& out, allocator::Buffer b) { out.set_data(b); }\n}\n";
    let backend = files(&[
        ("mlx/backend/rocm/event.cpp", ROCM_EVENT),
        ("mlx/backend/rocm/copy.cpp", copy),
    ]);
    let from = files(&[("mlx/event.h", EVENT_H), ("mlx/array.h", ARRAY_H)]);
    let event_h = event_with_is_signaled();
    let array_h = ARRAY_H.replace("Buffer buf);", "Buffer buf, Deleter d);");
    let macro_h = format!("{event_h}#define DISPATCH_ALL(type) void dispatch(type)\n");
    // Each pin's headers, its findings, and how many files it parses (None: all, as with no
    // store).
    let pins: [(&str, &str, usize, Option<usize>); 3] = [
        (&event_h, ARRAY_H, 1, None),
        (&event_h, &array_h, 2, Some(1)),
        (&macro_h, &array_h, 2, Some(2)),
    ];
    let cfg = ApiConfig::default();
    for (event, array, findings, parsed) in pins {
        let to = files(&[
            ("mlx/event.h", event),
            ("mlx/array.h", array),
            ("mlx/backend/cuda/event.cu", &cuda),
        ]);
        let parses = Parses::new(Some(&store));
        let kept = analyze_kept(&from, &to, &backend, &cfg, &parses);
        let unkept = Parses::new(None);
        let fresh = analyze_kept(&from, &to, &backend, &cfg, &unkept);
        assert_eq!(kept.findings.len(), findings, "{:?}", found(&kept));
        let parsed = parsed.unwrap_or(unkept.made());
        assert_eq!(parses.made(), parsed, "{event}{array}");
        let json = |r: &ApiReport| serde_json::to_string(r).unwrap();
        assert_eq!(json(&kept), json(&fresh));
        let text = |r: &ApiReport| r.doc(&Default::default()).text();
        assert_eq!(text(&kept), text(&fresh));
    }
}

#[test]
fn a_cold_analysis_parses_no_old_source_and_no_file_that_defines_nothing_wanted() {
    use super::{analyze_kept, Parses};
    let cuda = format!(
        "{}bool Event::is_signaled() const {{ return true; }}\n}}\n",
        ROCM_EVENT.trim_end().trim_end_matches('}')
    );
    // Spells `Event::is_signaled` only as part of another name: it defines nothing wanted.
    let metal =
        "namespace mlx::core {\nbool Event::is_signaled_before(int v) const { return v > 0; }\n}\n";
    let shared =
        |body: &str| format!("namespace mlx::core {{\nint helper() {{ return {body}; }}\n}}\n");
    let (old_shared, new_shared) = (shared("1"), shared("2"));
    let from = files(&[
        ("mlx/event.h", EVENT_H),
        ("mlx/backend/common/helper.cpp", &old_shared),
    ]);
    let event_h = event_with_is_signaled();
    let to = files(&[
        ("mlx/event.h", &event_h),
        ("mlx/backend/common/helper.cpp", &new_shared),
        ("mlx/backend/cuda/event.cu", &cuda),
        ("mlx/backend/metal/event.cpp", metal),
    ]);
    let backend = files(&[("mlx/backend/rocm/event.cpp", ROCM_EVENT)]);
    let parses = Parses::new(None);
    let report = analyze_kept(&from, &to, &backend, &ApiConfig::default(), &parses);
    assert_eq!(
        found(&report),
        one(
            Kind::MissingBackendDefinition,
            "mlx::core::Event::is_signaled"
        )
    );
    assert!(report.findings[0]
        .message
        .contains("mlx/backend/cuda/event.cu:6"));
    // Both pins' `event.h`, the new `helper.cpp` (the rules read no old definition), the
    // backend's file, and the one reference file defining `Event::is_signaled`: not the old
    // `helper.cpp`, nor metal's file (7 parses before).
    assert_eq!(parses.made(), 5);
}
