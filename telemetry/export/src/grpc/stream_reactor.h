// The write/finish state machine of the Telemetry service's server streams (WatchStats,
// StreamSamples, WatchOutliers): StreamReactor, which a stream subclasses with how it fills its
// messages, ErrorReactor for a stream refused at once, and ToGrpc. Internal to rtloop_telemetry;
// included by server_core.cc and outlier_stream.cc only (gRPC headers: slow to compile).
//
// Threading: as server_core.h says of streams; gRPC calls (StartWrite, Finish, TryCancel) are
// never made under a reactor's lock, because gRPC may run a reaction inline. Not RT-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "rtloop/framework/status.h"
#include "server_core.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace rtloop::telemetry::internal {

// ThreadSanitizer and gRPC's callback API. gRPC calls a reactor's reactions on its own threads,
// each after the operation that causes it (the handler returning the reactor, StartWrite, Finish,
// TryCancel) and OnDone after all the others; it orders them through its completion queue and
// absl::Mutex, and Debian's libgrpc is built without TSan, so TSan does not see that order. These
// two state it for the reactor's memory at exactly those points: HandOver() before the reactor goes
// to gRPC (and at the end of a reaction, which OnDone follows), TakeBack() when a reaction starts.
// gRPC's own inline code (grpcpp headers) is covered by tests/sanitizers/tsan.supp instead. Nothing
// in builds without -fsanitize=thread.
inline void HandOver(const void* reactor) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(reactor));
#else
  (void)reactor;
#endif
}
inline void TakeBack(const void* reactor) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(const_cast<void*>(reactor));
#else
  (void)reactor;
#endif
}

inline grpc::Status ToGrpc(const Status& s) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case StatusCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case StatusCode::kPermissionDenied:
      code = grpc::StatusCode::PERMISSION_DENIED;
      break;
    case StatusCode::kUnauthenticated:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case StatusCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    default:
      break;
  }
  return grpc::Status(code, s.message());
}

// A stream that fails at once (bad request, missing token, stream limit).
template <typename Response>
class ErrorReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  ErrorReactor(ServerCore* core, const grpc::Status& status) : core_(core) {
    core_->HandlerStarted();
    this->Finish(status);
    HandOver(this);
  }
  void OnDone() override {
    TakeBack(this);
    ServerCore* core = core_;
    delete this;
    core->HandlerDone();
  }

 private:
  ServerCore* core_;
};

// The write/finish state machine shared by both streams. Subclasses fill the messages.
template <typename Response>
class StreamReactor : public grpc::ServerWriteReactor<Response>, public StreamBase {
 public:
  StreamReactor(ServerCore* core, grpc::CallbackServerContext* context)
      : core_(core), context_(context) {}
  ~StreamReactor() override { core_->ReleaseStream(); }

  void Kick() override {
    enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
    grpc::Status status;
    {
      std::lock_guard lock(mu_);
      if (writing_ || finished_) return;
      if (finish_requested_) {
        finished_ = true;
        status = finish_status_;
        action = Action::kFinish;
      } else if (ending_) {
        // The run ended: what is queued (until the deadline), then the final message, then OK.
        if (!end_sent_ && SteadyClock::now() < end_deadline_ && FillQueued(&message_)) {
          action = Action::kWrite;
        } else if (!end_sent_) {
          FillEnd(&message_);
          end_sent_ = true;
          action = Action::kWrite;
        } else {
          finished_ = true;
          status = grpc::Status::OK;
          action = Action::kFinish;
        }
      } else if (Fill(&message_)) {
        action = Action::kWrite;
      }
      if (action == Action::kWrite) {
        writing_ = true;
        write_started_ = SteadyClock::now();
      }
    }
    if (action == Action::kWrite) {
      HandOver(this);
      this->StartWrite(&message_);
    } else if (action == Action::kFinish) {
      HandOver(this);
      this->Finish(status);
    }
  }

  void RequestFinish(const grpc::Status& status) override {
    {
      std::lock_guard lock(mu_);
      if (!finish_requested_) {
        finish_requested_ = true;
        finish_status_ = status;
      }
    }
    Kick();
  }

  void RequestEnd(SteadyClock::time_point deadline) override {
    {
      std::lock_guard lock(mu_);
      if (!ending_ && !finish_requested_) {
        ending_ = true;
        end_deadline_ = deadline;
      }
    }
    Kick();
  }

  bool CancelIfStalled(SteadyClock::time_point now, std::chrono::milliseconds timeout) override {
    {
      std::lock_guard lock(mu_);
      if (!writing_ || stall_cancelled_ || finished_ || now - write_started_ < timeout) {
        return false;
      }
      stall_cancelled_ = true;
      if (!finish_requested_) {
        finish_requested_ = true;
        finish_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "stream stalled");
      }
      cancelling_ = true;
      canceller_ = std::this_thread::get_id();
    }
    // The write in flight then completes with ok=false and OnCancel() follows; Kick() finishes.
    // The context lives until OnDone(), which waits for this call to return.
    HandOver(this);
    context_->TryCancel();
    {
      std::lock_guard lock(mu_);
      cancelling_ = false;
    }
    cancel_cv_.notify_all();
    return true;
  }

  SteadyClock::time_point NextDue() override {
    std::lock_guard lock(mu_);
    // A write in flight ends in OnWriteDone(), which kicks again.
    if (writing_ || finished_) return SteadyClock::time_point::max();
    return DueLocked();
  }

  void OnWriteDone(bool ok) override {
    TakeBack(this);
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      if (!ok && !finish_requested_) {
        finish_requested_ = true;
        finish_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
      }
    }
    Kick();
    HandOver(this);  // OnDone may follow on another thread
  }

  // StreamSamples sends the response headers at once; nothing to do when they went, but OnDone may
  // follow on another thread.
  void OnSendInitialMetadataDone(bool /*ok*/) override {
    TakeBack(this);
    HandOver(this);
  }

  void OnCancel() override {
    TakeBack(this);
    RequestFinish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
    HandOver(this);
  }

  void OnDone() override {
    TakeBack(this);
    {
      // gRPC may run OnDone inline in TryCancel(): then it is the cancelling thread and must not
      // wait for itself.
      std::unique_lock lock(mu_);
      cancel_cv_.wait(lock,
                      [this] { return !cancelling_ || canceller_ == std::this_thread::get_id(); });
    }
    Closing();
    core_->Unregister(this);  // may destroy this
  }

 protected:
  // Under the lock, with no write in flight: puts the next message into `out`, or returns false
  // when none is ready yet.
  virtual bool Fill(Response* out) = 0;
  // After the end was requested: the next message of data already queued, or false.
  virtual bool FillQueued(Response* out) = 0;
  // The final message (StreamEnd); what is still queued then counts as lost.
  virtual void FillEnd(Response* out) = 0;
  // Once, from OnDone, before the reactor is released.
  virtual void Closing() {}
  // Under the lock: when Fill() will next have a message for the pump to kick out; max() when
  // the stream is woken otherwise (its data source).
  virtual SteadyClock::time_point DueLocked() const { return SteadyClock::time_point::max(); }

  ServerCore* const core_;

 private:
  grpc::CallbackServerContext* const context_;
  std::mutex mu_;
  bool writing_ = false;
  bool finished_ = false;
  bool finish_requested_ = false;
  bool ending_ = false;
  bool end_sent_ = false;
  bool stall_cancelled_ = false;
  bool cancelling_ = false;  // CancelIfStalled() is in TryCancel()
  std::thread::id canceller_;
  std::condition_variable cancel_cv_;
  SteadyClock::time_point end_deadline_;
  SteadyClock::time_point write_started_;
  grpc::Status finish_status_;
  Response message_;  // the message being written; untouched until OnWriteDone
};

}  // namespace rtloop::telemetry::internal
