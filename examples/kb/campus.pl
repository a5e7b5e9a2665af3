% A small campus knowledge base for `logicpipe kb`: courses, grades, facilities and the library.
% Percepts (real-time values, set with --percept): p_weather/1, p_hour/1, p_day/1.

:- dynamic p_weather/1, p_hour/1, p_day/1.

% --- people ----------------------------------------------------------------------------------
student(alice).
student(bob).
student(carol).
student(dave).
student(erin).
professor(turing).
professor(hopper).
professor(knuth).
professor(noether).

% --- courses: course(Code, Department, Credits) ----------------------------------------------
course(cs101, computing, 6).
course(cs201, computing, 6).
course(cs301, computing, 6).
course(cs401, computing, 8).
course(math101, mathematics, 6).
course(math201, mathematics, 6).
course(phil101, philosophy, 4).

teaches(hopper, cs101).
teaches(hopper, cs201).
teaches(turing, cs301).
teaches(turing, cs401).
teaches(noether, math101).
teaches(noether, math201).
teaches(knuth, phil101).

% prerequisite(Course, Required)
prerequisite(cs201, cs101).
prerequisite(cs301, cs201).
prerequisite(cs301, math101).
prerequisite(cs401, cs301).
prerequisite(math201, math101).

% passed(Student, Course, Mark out of 100); a mark under 50 is a fail.
passed(alice, cs101, 91).
passed(alice, cs201, 78).
passed(alice, math101, 88).
passed(bob, cs101, 45).
passed(bob, math101, 62).
passed(carol, cs101, 70).
passed(carol, phil101, 95).
passed(dave, math101, 55).

enrolled(alice, cs301).
enrolled(alice, math201).
enrolled(bob, cs101).
enrolled(carol, cs201).
enrolled(carol, math101).
enrolled(carol, phil101).
enrolled(dave, math201).
enrolled(dave, cs101).
enrolled(erin, phil101).

% --- facilities: facility(Name, indoor|outdoor), hours(Name, Opens, Closes) on a 24 h clock------------------
facility(library, indoor).
facility(gym, indoor).
facility(pool, outdoor).
facility(stadium, outdoor).
hours(library, 8, 22).
hours(gym, 6, 21).
hours(pool, 9, 18).
hours(stadium, 10, 20).
bad_weather(rain).
bad_weather(storm).

% walkway(A, B): a covered walkway between two buildings (either direction).
walkway(library, gym).
walkway(gym, pool).
walkway(pool, stadium).

% --- library: book(Id, Title, Subject), loans with the day they are due ------------------------
book(sicp, 'Structure and Interpretation of Computer Programs', computing).
book(taocp, 'The Art of Computer Programming', computing).
book(algebra, 'Moderne Algebra', mathematics).
book(republic, 'The Republic', philosophy).
on_loan(taocp, bob).
on_loan(republic, erin).
due_day(taocp, 10).
due_day(republic, 30).

% --- rules -----------------------------------------------------------------------------------
% A course requires its prerequisites, and theirs (recursion).
requires(Course, Required) :- prerequisite(Course, Required).
requires(Course, Required) :- prerequisite(Course, Middle), requires(Middle, Required).

completed(Student, Course) :- passed(Student, Course, Mark), Mark >= 50.
failed(Student, Course) :- passed(Student, Course, Mark), Mark < 50.
distinction(Student, Course) :- passed(Student, Course, Mark), Mark >= 85.

% Negation as failure: a course is open to a student who lacks no prerequisite and has not done it.
missing_prerequisite(Student, Course) :- prerequisite(Course, Required), \+ completed(Student, Required).
eligible(Student, Course) :-
    student(Student), course(Course, _, _),
    \+ completed(Student, Course),
    \+ missing_prerequisite(Student, Course).

taught_by(Student, Professor) :- enrolled(Student, Course), teaches(Professor, Course).
colleagues(P, Q) :- teaches(P, C1), course(C1, Dept, _), teaches(Q, C2), course(C2, Dept, _), P \== Q.

earned_credits(Student, Total) :-
    student(Student),
    aggregate_all(sum(Credits), (completed(Student, C), course(C, _, Credits)), Total).
load(Student, Total) :-
    student(Student),
    aggregate_all(sum(Credits), (enrolled(Student, C), course(C, _, Credits)), Total).
full_time(Student) :- load(Student, Total), Total >= 12.

% Walkways go both ways: a cyclic rule, ended by the prover's loop check.
linked(A, B) :- walkway(A, B).
linked(A, B) :- linked(B, A).
reachable(A, B) :- linked(A, B).
reachable(A, C) :- linked(A, B), reachable(B, C).

% Percepts: whether a facility is open depends on the hour and, outdoors, the weather.
weather_ok(Facility) :- facility(Facility, indoor).
weather_ok(Facility) :- facility(Facility, outdoor), p_weather(Weather), \+ bad_weather(Weather).
open_now(Facility) :-
    p_hour(Hour), hours(Facility, Open, Close),
    Hour >= Open, Hour < Close,
    weather_ok(Facility).

overdue(Book, Student) :- on_loan(Book, Student), due_day(Book, Due), p_day(Today), Today > Due.
available(Book) :- book(Book, _, _), \+ on_loan(Book, _).
can_borrow(Student, Book) :- student(Student), available(Book), \+ overdue(_, Student).

% --- tabling and cut -------------------------------------------------------------------------
% connected/2 (walkways followed in their direction, any number of them) is left-recursive: it calls
% itself first, so plain depth-first search would loop forever; `:- table` makes SWI-Prolog answer it
% completely and stop.
:- table connected/2.
connected(A, B) :- connected(A, C), walkway(C, B).
connected(A, B) :- walkway(A, B).

% grade/2: the first clause whose test holds commits (the cut), so every mark has exactly one grade.
grade(Mark, distinction) :- Mark >= 85, !.
grade(Mark, pass) :- Mark >= 50, !.
grade(_, fail).
course_grade(Student, Course, Grade) :- passed(Student, Course, Mark), grade(Mark, Grade).
