#include "io/torch/pickle/machine.hpp"

namespace clp_transfer::io {

bool pickle_machine::plain_value(const pickle_instruction& in) {
  using op = pickle_opcode;
  const auto push_new = [&](kind type) -> pickle_value& {
    stack_.push(stack_.make(type));
    return *stack_.back();
  };
  switch (in.op) {
    case op::proto:
      if (in.number < 2 || in.number > 5)
        site_.fail("pickle protocol " + std::to_string(in.number) + " (torch writes 2 to 5)");
      return true;
    case op::frame:  // a length that only helps a reader buffer
      return true;
    case op::none:
      push_new(kind::none);
      return true;
    case op::newtrue:
    case op::newfalse:
      push_new(kind::boolean).boolean = in.op == op::newtrue;
      return true;
    case op::binint:
    case op::binint1:
    case op::binint2:
    case op::long1:
    case op::long4:
      push_new(kind::integer).integer = in.integer;
      return true;
    case op::binfloat:
      push_new(kind::floating).floating = in.floating;
      return true;
    case op::binunicode:
    case op::short_binunicode:
    case op::binunicode8:
      push_new(kind::string).text = std::string(in.text);
      return true;
    case op::binbytes:
    case op::short_binbytes:
    case op::binbytes8:
      push_new(kind::bytes).text = std::string(in.text);
      return true;
    case op::pop:
      stack_.pop_value_or_mark();
      return true;
    case op::dup:
      stack_.push(pickle_ref(stack_.top()));
      return true;
    default:
      return false;
  }
}

bool pickle_machine::container(const pickle_instruction& in) {
  using op = pickle_opcode;
  switch (in.op) {
    case op::mark:
      stack_.mark();
      return true;
    case op::pop_mark:
      stack_.pop_mark();
      return true;
    case op::empty_tuple:
      stack_.push(stack_.make(kind::tuple));
      return true;
    case op::tuple:
      stack_.push(sequence(kind::tuple, stack_.pop_mark()));
      return true;
    case op::tuple1:
    case op::tuple2:
    case op::tuple3: {
      std::vector<pickle_ref> items(in.op == op::tuple1 ? 1 : in.op == op::tuple2 ? 2 : 3);
      for (std::size_t i = items.size(); i-- > 0;) items[i] = stack_.pop();
      stack_.push(sequence(kind::tuple, std::move(items)));
      return true;
    }
    case op::empty_list:
      stack_.push(stack_.make(kind::list));
      return true;
    case op::list:
      stack_.push(sequence(kind::list, stack_.pop_mark()));
      return true;
    case op::append: {
      pickle_ref item = stack_.pop();
      pickle_value& list = *stack_.top();
      if (!list.is(kind::list)) site_.fail("APPEND to a value that is not a list");
      stack_.adopt(list, std::move(item));
      return true;
    }
    case op::appends: {
      std::vector<pickle_ref> items = stack_.pop_mark();
      pickle_value& list = *stack_.top();
      if (!list.is(kind::list)) site_.fail("APPENDS to a value that is not a list");
      for (pickle_ref& item : items) stack_.adopt(list, std::move(item));
      return true;
    }
    case op::empty_dict:
      stack_.push(stack_.make(kind::dict));
      return true;
    case op::dict: {
      pickle_ref dict = stack_.make(kind::dict);
      set_items(*dict, stack_.pop_mark());
      stack_.push(std::move(dict));
      return true;
    }
    case op::setitem: {
      pickle_ref value = stack_.pop();
      pickle_ref key = stack_.pop();
      std::vector<pickle_ref> pair{std::move(key), std::move(value)};
      set_items(*stack_.top(), std::move(pair));
      return true;
    }
    case op::setitems: {
      std::vector<pickle_ref> pairs = stack_.pop_mark();
      set_items(*stack_.top(), std::move(pairs));
      return true;
    }
    default:
      return false;
  }
}

bool pickle_machine::memo(const pickle_instruction& in) {
  using op = pickle_opcode;
  switch (in.op) {
    case op::binput:
    case op::long_binput:
    case op::memoize: {
      const std::uint64_t index = in.op == op::memoize ? memo_.size() : in.number;
      if (stack_.size() == 0) site_.fail("memoizes with an empty stack");
      if (memo_.size() >= stack_.limits().memo && !memo_.count(index))
        site_.fail("more than " + std::to_string(stack_.limits().memo) + " memo entries");
      memo_[index] = stack_.back();
      return true;
    }
    case op::binget:
    case op::long_binget: {
      const auto found = memo_.find(in.number);
      if (found == memo_.end()) site_.fail("gets memo entry " + std::to_string(in.number) + ", which was never put");
      stack_.push(found->second);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace clp_transfer::io
