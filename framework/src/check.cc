// TODO: implemented by the foundation work.
namespace rtloop {}
